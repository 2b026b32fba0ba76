/*
 * mrail-run's key-value service: single-threaded, non-blocking, driven by the
 * launcher's event loop. The service owns an epoll instance; the launcher
 * polls its fd for readability (and for the timeout it asks for) and calls
 * mrail_kvs_server_dispatch(), which never blocks.
 */
#ifndef MRAIL_KVS_SERVER_H
#define MRAIL_KVS_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "util/auth.h"

struct mrail_kvs_server;

struct mrail_kvs_server_config {
	const char *bind;     /* listen address (name or numeric); NULL =
	                         127.0.0.1 */
	uint32_t size;        /* ranks in the job */
	const uint8_t *key;   /* the job key, MRAIL_AUTH_KEY_BYTES */
	double auth_timeout;  /* seconds a connection has to authenticate */
	size_t store_max;     /* cap on stored keys+values, bytes */
};

/* Listen on an ephemeral port. 0 or a negative MRAIL_ERR_* (logged). */
int mrail_kvs_server_create(const struct mrail_kvs_server_config *cfg,
			    struct mrail_kvs_server **out);
void mrail_kvs_server_destroy(struct mrail_kvs_server *s);

/* What ranks connect to: "127.0.0.1:PORT" or "[::1]:PORT". */
const char *mrail_kvs_server_address(const struct mrail_kvs_server *s);
/* Poll this fd for POLLIN. */
int mrail_kvs_server_fd(const struct mrail_kvs_server *s);
/* Milliseconds until the service needs dispatching anyway, -1 if never. */
int mrail_kvs_server_timeout_ms(const struct mrail_kvs_server *s);
/* Handle whatever is ready and expire overdue handshakes; never blocks. */
void mrail_kvs_server_dispatch(struct mrail_kvs_server *s);
/* The launcher is ending the job: ranks vanishing is expected from now on,
 * so their disconnects are logged at debug level only. */
void mrail_kvs_server_job_ending(struct mrail_kvs_server *s);

#endif

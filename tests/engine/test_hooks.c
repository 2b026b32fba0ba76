/*
 * Per-rail hooks (mrail-run -n 2 or 3): rail_up runs for every rail of
 * every peer from the first connection on (set in the config, so the
 * rails a bootstrapped create connects are seen), with the connection's
 * socket and 4-tuple for IP drivers; mrail_rail_conn() gives back the
 * state the hook returned; replacing the hooks runs rail_down for each
 * rail with the old state, then rail_up again with the new hooks; destroy
 * runs rail_down before the connections close.
 */
#include "harness.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#define MAX_RAILS 64

struct rec {
	int up, down;
	void *state;
	int fd;
	char local[64], remote[64];
};

static struct rec recs[8][MAX_RAILS];

static void name_of(const struct sockaddr *sa, char *buf, size_t len)
{
	const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
	char ip[INET_ADDRSTRLEN];
	CHECK(sa->sa_family == AF_INET);
	inet_ntop(AF_INET, &in->sin_addr, ip, sizeof ip);
	snprintf(buf, len, "%s:%u", ip, ntohs(in->sin_port));
}

static void *on_up(void *ctx, const struct mrail_rail_conn *c)
{
	int *tag = ctx;
	CHECK(c->peer < 8 && c->rail >= 0 && c->rail < MAX_RAILS);
	struct rec *r = &recs[c->peer][c->rail];
	r->up++;
	r->fd = c->fd;
	if (!strcmp(c->driver, "tcp")) {
		CHECK(c->fd >= 0);
		CHECK(c->local && c->remote);
		CHECK(c->addr_len == sizeof(struct sockaddr_in));
		name_of(c->local, r->local, sizeof r->local);
		name_of(c->remote, r->remote, sizeof r->remote);
	} else {
		CHECK(!c->local && !c->remote);
	}
	r->state = (char *)&recs[c->peer][c->rail] + *tag;
	return r->state;
}

static void on_down(void *ctx, const struct mrail_rail_conn *c, void *state)
{
	(void)ctx;
	struct rec *r = &recs[c->peer][c->rail];
	CHECK(state == r->state);
	r->down++;
}

static const struct mrail_rail_hooks hooks = {on_up, on_down, NULL};

static void check_all(mrail_engine_t *e, uint32_t me, uint32_t n, int ups,
		      int downs)
{
	for (uint32_t p = 0; p < n; p++) {
		int nr = mrail_rail_count(e, p);
		if (p == me) {
			CHECK_EQ(nr, 0);
			continue;
		}
		CHECK(nr >= 1);
		for (int i = 0; i < nr; i++) {
			struct rec *r = &recs[p][i];
			struct mrail_rail_info info;
			struct mrail_rail_conn c;
			void *state;
			CHECK_EQ(r->up, ups);
			CHECK_EQ(r->down, downs);
			CHECK_RC(mrail_rail_info(e, p, i, &info));
			if (!strcmp(info.driver, "tcp")) {
				/* The hook saw the rail's own connection. */
				CHECK(!strcmp(r->local, info.local_addr));
				CHECK(!strcmp(r->remote, info.remote_addr));
			}
			CHECK_RC(mrail_rail_conn(e, p, i, &c, &state));
			CHECK_EQ(c.fd, r->fd);
			CHECK(state == (downs == ups ? NULL : r->state));
		}
	}
}

int main(void)
{
	static int tag1 = 1, tag2 = 2;
	struct mrail_config cfg;
	mrail_engine_t *e;

	CHECK_RC(mrail_config_init(&cfg));
	cfg.rail_hooks = &hooks;
	cfg.rail_hooks_ctx = &tag1;
	CHECK_RC(mrail_engine_create(&cfg, &e));
	uint32_t me = mrail_rank(e), n = mrail_size(e);
	CHECK(n >= 2 && n <= 8);
	check_all(e, me, n, 1, 0);

	/* Replace: old hooks see every rail go, new ones see them come. */
	CHECK_RC(mrail_set_rail_hooks(e, &hooks, &tag2));
	check_all(e, me, n, 2, 1);
	for (uint32_t p = 0; p < n; p++)
		for (int i = 0; p != me && i < mrail_rail_count(e, p); i++)
			CHECK(recs[p][i].state ==
			      (char *)&recs[p][i] + tag2);

	/* Traffic still flows, then destroy calls rail_down for each. */
	uint64_t v = me, got = 0;
	mrail_request_t *rq[2];
	uint32_t to = (me + 1) % n, from = (me + n - 1) % n;
	CHECK_RC(mrail_irecv(e, from, &got, 8, 3, MRAIL_TAG_MASK_ALL, &rq[0]));
	CHECK_RC(mrail_isend(e, to, &v, 8, 3, &rq[1]));
	CHECK_RC(mrail_wait_all(e, 2, rq, NULL));
	CHECK_EQ(got, from);
	int rails[8];
	for (uint32_t p = 0; p < n; p++)
		rails[p] = p == me ? 0 : mrail_rail_count(e, p);
	CHECK_RC(mrail_engine_destroy(e));
	for (uint32_t p = 0; p < n; p++)
		for (int i = 0; i < rails[p]; i++)
			CHECK_EQ(recs[p][i].down, 2);
	printf("test_hooks: rank %u ok\n", me);
	return 0;
}

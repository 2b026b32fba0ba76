/* mrail-run's command line. */
#ifndef MRAIL_RUN_OPTIONS_H
#define MRAIL_RUN_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>

#define MRAIL_RUN_NP_MAX 1024

struct run_options {
	unsigned np;          /* -n/--np: ranks to start */
	double timeout;       /* --timeout: seconds for the whole job, 0 = none */
	double grace;         /* --grace: SIGTERM-to-SIGKILL delay, seconds */
	double auth_timeout;  /* --auth-timeout: seconds a KVS connection has
	                         to authenticate */
	bool keep_going;      /* --keep-going */
	bool tag_output;      /* --tag-output */
	const char *bind;     /* --bind: KVS listen address */
	const char *hosts;    /* --hosts h0,h1,...: NULL if not given */
	const char *hostfile; /* --hostfile FILE: NULL if not given */
	const char *wrap;     /* --wrap TEMPLATE: NULL if not given */
	bool wrap_quote;      /* --wrap-quote */
	char **env;           /* -x VAR=VALUE, in order */
	size_t nenv;
	char **argv;          /* the program and its arguments */
};

enum {
	RUN_OPTIONS_OK = 0,   /* run the job */
	RUN_OPTIONS_EXIT = 1, /* --help/--version printed: exit 0 */
	RUN_OPTIONS_USAGE = 2 /* error printed: exit 2 */
};

/* Parse argv; messages go to stdout (help) or stderr (errors). */
int run_options_parse(int argc, char **argv, struct run_options *o);
void run_options_free(struct run_options *o);
/* 1 if mrail-run sets the variable name[0..len) itself (the contract). */
int run_options_reserved(const char *name, size_t len);

#endif

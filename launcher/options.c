#include "launcher/options.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mrail_config.h"

/* Variables mrail-run sets itself: -x must not override the contract. */
static const char *const reserved_env[] = {
	"MRAIL_RANK", "MRAIL_SIZE", "MRAIL_LOCAL_RANK", "MRAIL_LOCAL_SIZE",
	"MRAIL_KVS_ADDR", "MRAIL_JOB_KEY",
};

int run_options_reserved(const char *name, size_t len)
{
	for (size_t i = 0; i < sizeof reserved_env / sizeof *reserved_env; i++)
		if (strlen(reserved_env[i]) == len &&
		    !strncmp(name, reserved_env[i], len))
			return 1;
	return 0;
}

static void usage(FILE *f)
{
	fputs("Usage: mrail-run -n N [options] PROGRAM [ARGS...]\n"
	      "Start N ranks of PROGRAM, connected through an embedded\n"
	      "key-value service (the libmrail \"kvs\" bootstrap).\n"
	      "\n"
	      "Options:\n"
	      "  -n, --np N            number of ranks, 1..1024 (default 1)\n"
	      "  -x VAR=VALUE          set VAR in every rank's environment\n"
	      "                        (repeatable)\n"
	      "      --timeout SEC     kill the job after SEC seconds (exit 124)\n"
	      "      --grace SEC       delay between SIGTERM and SIGKILL when\n"
	      "                        ending ranks (default 2)\n"
	      "      --keep-going      when a rank fails, let the others finish;\n"
	      "                        still exit with the first failure's status\n"
	      "      --bind ADDR       KVS listen address (default 127.0.0.1;\n"
	      "                        e.g. ::1)\n"
	      "      --auth-timeout SEC  drop KVS connections that have not\n"
	      "                        authenticated after SEC s (default 5)\n"
	      "      --tag-output      prefix each output line with [RANK]\n"
	      "      --hosts H0,H1,... rank r runs on host r % H (sets\n"
	      "                        MRAIL_LOCAL_RANK/SIZE per host; see --wrap)\n"
	      "      --hostfile FILE   hosts one per line, optional slots=N\n"
	      "                        (ranks fill a host's slots, then the next)\n"
	      "      --wrap TEMPLATE   start each rank as TEMPLATE PROGRAM ARGS...;\n"
	      "                        TEMPLATE is split on blanks (no shell);\n"
	      "                        {host} {rank} are replaced in each word,\n"
	      "                        the word {env} becomes 'env VAR=VALUE...'\n"
	      "                        (the rank's MRAIL_* and -x variables);\n"
	      "                        e.g. --wrap 'ip netns exec {host}'\n"
	      "      --wrap-quote      shell-quote the {env} words, PROGRAM and\n"
	      "                        ARGS (for wrappers that run a remote\n"
	      "                        shell: --wrap 'ssh {host} {env}')\n"
	      "  -h, --help            show this help\n"
	      "      --version         show the version\n"
	      "\n"
	      "Exit status: 0 if every rank exits 0; else the first failed\n"
	      "rank's status (128+N if killed by signal N); 124 on --timeout;\n"
	      "128+N when mrail-run gets signal N; 126/127 if PROGRAM (with\n"
	      "--wrap: the wrapper) cannot be run; 2 on a usage error.\n",
	      f);
}

static int bad_value(const char *opt, const char *val, const char *expect)
{
	fprintf(stderr, "mrail-run: invalid value '%s' for %s: expected %s\n",
		val, opt, expect);
	return RUN_OPTIONS_USAGE;
}

static int parse_seconds(const char *opt, const char *val, double min,
			 double *out)
{
	char *end;
	errno = 0;
	double v = strtod(val, &end);
	if (errno || end == val || *end || !isfinite(v) || v < min ||
	    v > 1e9)
		return bad_value(opt, val,
				 min > 0 ? "a positive number of seconds"
					 : "a number of seconds >= 0");
	*out = v;
	return RUN_OPTIONS_OK;
}

static int parse_np(const char *val, unsigned *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(val, &end, 10);
	if (errno || end == val || *end || val[0] == '-' || v < 1 ||
	    v > MRAIL_RUN_NP_MAX)
		return bad_value("-n/--np", val, "an integer in 1..1024");
	*out = (unsigned)v;
	return RUN_OPTIONS_OK;
}

static int add_env(struct run_options *o, char *val)
{
	const char *eq = strchr(val, '=');
	size_t name_len = eq ? (size_t)(eq - val) : 0;

	if (!eq || name_len == 0)
		return bad_value("-x", val, "VAR=VALUE");
	for (size_t i = 0; i < name_len; i++) {
		char c = val[i];
		if (!(c == '_' || (c >= 'A' && c <= 'Z') ||
		      (c >= 'a' && c <= 'z') || (i > 0 && c >= '0' && c <= '9')))
			return bad_value("-x", val,
					 "VAR=VALUE with VAR a valid "
					 "environment variable name");
	}
	if (run_options_reserved(val, name_len)) {
		fprintf(stderr, "mrail-run: -x %.*s: this variable is set by "
			"mrail-run itself\n", (int)name_len, val);
		return RUN_OPTIONS_USAGE;
	}
	char **env = realloc(o->env, (o->nenv + 1) * sizeof *env);
	if (!env) {
		fprintf(stderr, "mrail-run: out of memory\n");
		return RUN_OPTIONS_USAGE;
	}
	o->env = env;
	o->env[o->nenv++] = val;
	return RUN_OPTIONS_OK;
}

enum { OPT_TIMEOUT = 256, OPT_GRACE, OPT_KEEP_GOING, OPT_BIND,
       OPT_AUTH_TIMEOUT, OPT_TAG_OUTPUT, OPT_VERSION, OPT_HOSTS,
       OPT_HOSTFILE, OPT_WRAP, OPT_WRAP_QUOTE };

static const struct option long_options[] = {
	{"np", required_argument, NULL, 'n'},
	{"timeout", required_argument, NULL, OPT_TIMEOUT},
	{"grace", required_argument, NULL, OPT_GRACE},
	{"keep-going", no_argument, NULL, OPT_KEEP_GOING},
	{"bind", required_argument, NULL, OPT_BIND},
	{"auth-timeout", required_argument, NULL, OPT_AUTH_TIMEOUT},
	{"tag-output", no_argument, NULL, OPT_TAG_OUTPUT},
	{"hosts", required_argument, NULL, OPT_HOSTS},
	{"hostfile", required_argument, NULL, OPT_HOSTFILE},
	{"wrap", required_argument, NULL, OPT_WRAP},
	{"wrap-quote", no_argument, NULL, OPT_WRAP_QUOTE},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, OPT_VERSION},
	{NULL, 0, NULL, 0},
};

static int try_help(void)
{
	fputs("Try 'mrail-run --help' for more information.\n", stderr);
	return RUN_OPTIONS_USAGE;
}

int run_options_parse(int argc, char **argv, struct run_options *o)
{
	int c, rc = RUN_OPTIONS_OK;

	memset(o, 0, sizeof *o);
	o->np = 1;
	o->grace = 2.0;
	o->auth_timeout = 5.0;
	o->bind = "127.0.0.1";
	opterr = 0; /* our messages name the option and say what is wrong */
	/* '+': stop at the program name so its own options stay its own. */
	while (rc == RUN_OPTIONS_OK &&
	       (c = getopt_long(argc, argv, "+:hn:x:", long_options, NULL)) !=
		       -1) {
		switch (c) {
		case 'n':
			rc = parse_np(optarg, &o->np);
			break;
		case 'x':
			rc = add_env(o, optarg);
			break;
		case OPT_TIMEOUT:
			rc = parse_seconds("--timeout", optarg, 1e-3,
					   &o->timeout);
			break;
		case OPT_GRACE:
			rc = parse_seconds("--grace", optarg, 0, &o->grace);
			break;
		case OPT_AUTH_TIMEOUT:
			rc = parse_seconds("--auth-timeout", optarg, 1e-3,
					   &o->auth_timeout);
			break;
		case OPT_KEEP_GOING:
			o->keep_going = true;
			break;
		case OPT_TAG_OUTPUT:
			o->tag_output = true;
			break;
		case OPT_BIND:
			if (!*optarg)
				rc = bad_value("--bind", optarg,
					       "an IP address or host name");
			o->bind = optarg;
			break;
		case OPT_HOSTS:
			o->hosts = optarg;
			break;
		case OPT_HOSTFILE:
			o->hostfile = optarg;
			break;
		case OPT_WRAP:
			o->wrap = optarg;
			break;
		case OPT_WRAP_QUOTE:
			o->wrap_quote = true;
			break;
		case 'h':
			usage(stdout);
			rc = RUN_OPTIONS_EXIT;
			break;
		case OPT_VERSION:
			printf("mrail-run (libmrail) %s\n",
			       MRAIL_VERSION_STRING);
			rc = RUN_OPTIONS_EXIT;
			break;
		case ':':
			fprintf(stderr, "mrail-run: option '%s' requires a "
				"value\n", argv[optind - 1]);
			rc = try_help();
			break;
		default:
			if (optopt && optopt < 256)
				fprintf(stderr, "mrail-run: unknown option "
					"'-%c'\n", optopt);
			else
				fprintf(stderr, "mrail-run: unknown option "
					"'%s'\n", argv[optind - 1]);
			rc = try_help();
			break;
		}
	}
	if (rc == RUN_OPTIONS_OK && o->hosts && o->hostfile) {
		fputs("mrail-run: --hosts and --hostfile exclude each other\n",
		      stderr);
		rc = try_help();
	}
	if (rc == RUN_OPTIONS_OK && o->wrap_quote && !o->wrap) {
		fputs("mrail-run: --wrap-quote needs --wrap\n", stderr);
		rc = try_help();
	}
	if (rc == RUN_OPTIONS_OK && optind >= argc) {
		fputs("mrail-run: missing the program to run\n", stderr);
		rc = try_help();
	}
	if (rc == RUN_OPTIONS_OK)
		o->argv = argv + optind;
	else
		run_options_free(o);
	return rc;
}

void run_options_free(struct run_options *o)
{
	free(o->env);
	o->env = NULL;
	o->nenv = 0;
}

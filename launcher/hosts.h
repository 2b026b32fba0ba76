/*
 * Where ranks run (--hosts, --hostfile) and how each is started there
 * (--wrap): the placement of ranks on hosts, and the per-rank command line
 * built from the wrap template. No shell is involved: the template is split
 * on blanks into words and tokens are substituted inside words.
 */
#ifndef MRAIL_RUN_HOSTS_H
#define MRAIL_RUN_HOSTS_H

#include <stdbool.h>
#include <stddef.h>

#define HOST_NAME_LEN_MAX 255

/*
 * A list of slots: rank r runs on the host of slot r % nslots. --hosts
 * a,b gives one slot per host (round robin); a hostfile line "a slots=2"
 * gives host a two consecutive slots (ranks fill a host, then the next).
 */
struct host_list {
	char **names;     /* distinct hosts, first-seen order */
	size_t nnames;
	size_t *slot;     /* index into names, per slot */
	size_t nslots;
};

/* Parse "h0,h1,..." / a host file. 0, or -1 with a message on stderr. */
int host_list_parse(const char *list, struct host_list *h);
int host_list_read_file(const char *path, struct host_list *h);
void host_list_free(struct host_list *h);

struct placement {
	const char *host;    /* "localhost" without --hosts/--hostfile */
	unsigned local_rank; /* among the ranks on the same host */
	unsigned local_size;
};

/* Place np ranks (h may be NULL: all on this host). 0 or -1 (memory). */
int place_ranks(const struct host_list *h, unsigned np,
		struct placement *out);

/* A --wrap template split into words; tokens checked. */
struct wrap_template {
	char **words;
	size_t nwords;
};

int wrap_parse(const char *tmpl, struct wrap_template *w);
void wrap_free(struct wrap_template *w);

/*
 * The command line of one rank: the template's words with {host}, {rank}
 * substituted and {env} replaced by "env" and env[0..nenv), then prog[]
 * (NULL-terminated). With `quote`, the {env} words and prog's words are
 * shell-quoted where needed (for wrappers such as ssh that hand a command
 * line to a remote shell). A NULL-terminated malloc'd vector of malloc'd
 * strings (free with argv_free), or NULL when out of memory.
 */
char **wrap_argv(const struct wrap_template *w, const char *host,
		 unsigned rank, char *const *env, size_t nenv,
		 char *const *prog, bool quote);
void argv_free(char **argv);

#endif

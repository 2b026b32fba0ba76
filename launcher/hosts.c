#include "launcher/hosts.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launcher/options.h"

/* ---- host lists ------------------------------------------------------- */

/*
 * Host names end up as words of a command line, possibly one a remote
 * shell parses (ssh): letters, digits and . _ - : @ % [ ] only (names,
 * user@name, IPv4/IPv6 addresses, netns names), never a leading '-' (it
 * would be read as an option of the wrapper).
 */
static int check_host(const char *name, size_t len, const char *where)
{
	if (len == 0 || len > HOST_NAME_LEN_MAX) {
		fprintf(stderr, "mrail-run: %s: a host name must have 1..%d "
			"characters\n", where, HOST_NAME_LEN_MAX);
		return -1;
	}
	if (name[0] == '-') {
		fprintf(stderr, "mrail-run: %s: host '%.*s' starts with '-'\n",
			where, (int)len, name);
		return -1;
	}
	for (size_t i = 0; i < len; i++) {
		char c = name[i];
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || strchr("._-:@%[]", c))
			continue;
		fprintf(stderr, "mrail-run: %s: host '%.*s' contains '%c' "
			"(allowed: letters, digits and . _ - : @ %% [ ])\n",
			where, (int)len, name, c);
		return -1;
	}
	return 0;
}

/* Append `slots` slots of host name[0..len). */
static int add_host(struct host_list *h, const char *name, size_t len,
		    size_t slots)
{
	size_t idx;

	for (idx = 0; idx < h->nnames; idx++)
		if (strlen(h->names[idx]) == len &&
		    !memcmp(h->names[idx], name, len))
			break;
	if (idx == h->nnames) {
		char **n = realloc(h->names, (h->nnames + 1) * sizeof *n);
		if (!n)
			goto nomem;
		h->names = n;
		if (!(h->names[h->nnames] = strndup(name, len)))
			goto nomem;
		h->nnames++;
	}
	/* Rank r uses slot r % nslots and r < MRAIL_RUN_NP_MAX: slots past
	 * that are never used. */
	if (h->nslots + slots > MRAIL_RUN_NP_MAX)
		slots = h->nslots < MRAIL_RUN_NP_MAX
				? MRAIL_RUN_NP_MAX - h->nslots
				: 0;
	if (slots) {
		size_t *s = realloc(h->slot, (h->nslots + slots) * sizeof *s);
		if (!s)
			goto nomem;
		h->slot = s;
		while (slots--)
			h->slot[h->nslots++] = idx;
	}
	return 0;
nomem:
	fprintf(stderr, "mrail-run: out of memory\n");
	return -1;
}

int host_list_parse(const char *list, struct host_list *h)
{
	memset(h, 0, sizeof *h);
	for (const char *p = list;;) {
		size_t len = strcspn(p, ",");
		if (check_host(p, len, "--hosts") < 0 ||
		    add_host(h, p, len, 1) < 0) {
			host_list_free(h);
			return -1;
		}
		if (!p[len])
			return 0;
		p += len + 1;
	}
}

static int parse_slots(const char *v, size_t *out)
{
	char *end;
	errno = 0;
	unsigned long n = strtoul(v, &end, 10);
	if (errno || end == v || *end || v[0] == '-' || n < 1 ||
	    n > MRAIL_RUN_NP_MAX)
		return -1;
	*out = n;
	return 0;
}

/* "HOST [slots=N] [max_slots=N]", '#' comments, blank lines. */
static int read_line(struct host_list *h, char *line, const char *where)
{
	char *save, *host, *attr;
	size_t slots = 1;

	line[strcspn(line, "#\r\n")] = '\0';
	if (!(host = strtok_r(line, " \t", &save)))
		return 0;
	while ((attr = strtok_r(NULL, " \t", &save))) {
		if (!strncmp(attr, "slots=", 6)) {
			if (parse_slots(attr + 6, &slots) < 0) {
				fprintf(stderr, "mrail-run: %s: invalid '%s': "
					"expected slots=N with N in 1..%d\n",
					where, attr, MRAIL_RUN_NP_MAX);
				return -1;
			}
		} else if (strncmp(attr, "max_slots=", 10)) {
			/* max_slots (Open MPI) has no meaning here. */
			fprintf(stderr, "mrail-run: %s: unknown attribute '%s' "
				"(expected slots=N)\n", where, attr);
			return -1;
		}
	}
	if (check_host(host, strlen(host), where) < 0)
		return -1;
	return add_host(h, host, strlen(host), slots);
}

int host_list_read_file(const char *path, struct host_list *h)
{
	char *line = NULL, where[4096 + 32];
	size_t cap = 0;
	unsigned lineno = 0;
	int rc = 0;
	FILE *f = fopen(path, "r");

	memset(h, 0, sizeof *h);
	if (!f) {
		fprintf(stderr, "mrail-run: --hostfile %s: %s\n", path,
			strerror(errno));
		return -1;
	}
	while (rc == 0 && getline(&line, &cap, f) >= 0) {
		snprintf(where, sizeof where, "%s:%u", path, ++lineno);
		rc = read_line(h, line, where);
	}
	if (rc == 0 && ferror(f)) {
		fprintf(stderr, "mrail-run: --hostfile %s: read error\n", path);
		rc = -1;
	}
	if (rc == 0 && h->nslots == 0) {
		fprintf(stderr, "mrail-run: --hostfile %s: no hosts\n", path);
		rc = -1;
	}
	free(line);
	fclose(f);
	if (rc < 0)
		host_list_free(h);
	return rc;
}

void host_list_free(struct host_list *h)
{
	for (size_t i = 0; i < h->nnames; i++)
		free(h->names[i]);
	free(h->names);
	free(h->slot);
	memset(h, 0, sizeof *h);
}

int place_ranks(const struct host_list *h, unsigned np,
		struct placement *out)
{
	if (!h || h->nslots == 0) {
		for (unsigned r = 0; r < np; r++)
			out[r] = (struct placement){"localhost", r, np};
		return 0;
	}
	unsigned *count = calloc(h->nnames, sizeof *count);
	if (!count)
		return -1;
	for (unsigned r = 0; r < np; r++) {
		size_t host = h->slot[r % h->nslots];
		out[r].host = h->names[host];
		out[r].local_rank = count[host]++;
	}
	for (unsigned r = 0; r < np; r++)
		for (size_t i = 0; i < h->nnames; i++)
			if (out[r].host == h->names[i])
				out[r].local_size = count[i];
	free(count);
	return 0;
}

/* ---- the wrap template ------------------------------------------------ */

enum { TOK_NONE, TOK_HOST, TOK_RANK, TOK_ENV };

/* The token at s (which starts with '{'), its length in *len. */
static int token_at(const char *s, size_t *len)
{
	static const struct {
		const char *text;
		int tok;
	} toks[] = {{"{host}", TOK_HOST}, {"{rank}", TOK_RANK},
		    {"{env}", TOK_ENV}};

	for (size_t i = 0; i < sizeof toks / sizeof toks[0]; i++) {
		*len = strlen(toks[i].text);
		if (!strncmp(s, toks[i].text, *len))
			return toks[i].tok;
	}
	return TOK_NONE;
}

static int check_word(const char *w)
{
	for (const char *p = w; *p; p++) {
		size_t len;
		if ((p[0] == '{' && p[1] == '{') ||
		    (p[0] == '}' && p[1] == '}')) {
			p++;
			continue;
		}
		if (*p == '}') {
			fprintf(stderr, "mrail-run: --wrap: lone '}' in '%s' "
				"(write '}}' for a literal brace)\n", w);
			return -1;
		}
		if (*p != '{')
			continue;
		int tok = token_at(p, &len);
		if (tok == TOK_NONE) {
			fprintf(stderr, "mrail-run: --wrap: unknown token in "
				"'%s' (known: {host} {rank} {env}; '{{' for a "
				"literal brace)\n", w);
			return -1;
		}
		if (tok == TOK_ENV && strcmp(w, "{env}")) {
			fprintf(stderr, "mrail-run: --wrap: {env} must be a "
				"word of its own (in '%s')\n", w);
			return -1;
		}
		p += len - 1;
	}
	return 0;
}

int wrap_parse(const char *tmpl, struct wrap_template *w)
{
	const char *blanks = " \t\n";

	memset(w, 0, sizeof *w);
	for (const char *p = tmpl + strspn(tmpl, blanks); *p;) {
		size_t len = strcspn(p, blanks);
		char **words = realloc(w->words, (w->nwords + 1) *
						 sizeof *words);
		if (!words || !(words[w->nwords] = strndup(p, len))) {
			if (words)
				w->words = words;
			fprintf(stderr, "mrail-run: out of memory\n");
			wrap_free(w);
			return -1;
		}
		w->words = words;
		if (check_word(w->words[w->nwords++]) < 0) {
			wrap_free(w);
			return -1;
		}
		p += len;
		p += strspn(p, blanks);
	}
	if (w->nwords == 0) {
		fprintf(stderr, "mrail-run: --wrap: empty command template\n");
		return -1;
	}
	if (!strcmp(w->words[0], "{env}")) {
		fprintf(stderr, "mrail-run: --wrap: the template must start "
			"with a command, not {env}\n");
		wrap_free(w);
		return -1;
	}
	return 0;
}

void wrap_free(struct wrap_template *w)
{
	for (size_t i = 0; i < w->nwords; i++)
		free(w->words[i]);
	free(w->words);
	memset(w, 0, sizeof *w);
}

/* One template word with {host}/{rank} substituted and braces unescaped. */
static char *expand_word(const char *w, const char *host, unsigned rank)
{
	char num[16];
	size_t cap = strlen(w) + 1, n = 0;

	snprintf(num, sizeof num, "%u", rank);
	for (const char *p = w; *p; p++)
		if (*p == '{')
			cap += strlen(host) + sizeof num;
	char *out = malloc(cap);
	if (!out)
		return NULL;
	for (const char *p = w; *p; p++) {
		size_t len;
		const char *sub = NULL;
		if (p[0] == '{' && p[1] == '{') {
			out[n++] = '{';
			p++;
			continue;
		}
		if (p[0] == '}' && p[1] == '}') {
			out[n++] = '}';
			p++;
			continue;
		}
		if (*p == '{') {
			int tok = token_at(p, &len);
			sub = tok == TOK_HOST ? host : num;
			memcpy(out + n, sub, strlen(sub));
			n += strlen(sub);
			p += len - 1;
			continue;
		}
		out[n++] = *p;
	}
	out[n] = '\0';
	return out;
}

/* A word as a POSIX shell reads it back: as is when plain, else quoted. */
static char *shell_quote(const char *s)
{
	const char *safe = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			   "0123456789_@%+=:,./-";

	if (*s && strspn(s, safe) == strlen(s))
		return strdup(s);
	size_t n = 2;
	for (const char *p = s; *p; p++)
		n += *p == '\'' ? 4 : 1;
	char *out = malloc(n + 1), *o = out;
	if (!out)
		return NULL;
	*o++ = '\'';
	for (const char *p = s; *p; p++) {
		if (*p == '\'') {
			memcpy(o, "'\\''", 4); /* close, escaped ', reopen */
			o += 4;
		} else {
			*o++ = *p;
		}
	}
	*o++ = '\'';
	*o = '\0';
	return out;
}

char **wrap_argv(const struct wrap_template *w, const char *host,
		 unsigned rank, char *const *env, size_t nenv,
		 char *const *prog, bool quote)
{
	size_t nprog = 0, n = 0;

	while (prog[nprog])
		nprog++;
	size_t cap = w->nwords + nprog + 1;
	for (size_t i = 0; i < w->nwords; i++)
		if (!strcmp(w->words[i], "{env}"))
			cap += nenv; /* "env" takes the token's place */
	char **argv = calloc(cap, sizeof *argv);
	if (!argv)
		return NULL;
	for (size_t i = 0; i < w->nwords; i++) {
		if (!strcmp(w->words[i], "{env}")) {
			if (!(argv[n++] = strdup("env")))
				goto nomem;
			for (size_t e = 0; e < nenv; e++)
				if (!(argv[n++] = quote ? shell_quote(env[e])
							: strdup(env[e])))
					goto nomem;
			continue;
		}
		if (!(argv[n++] = expand_word(w->words[i], host, rank)))
			goto nomem;
	}
	for (size_t i = 0; i < nprog; i++)
		if (!(argv[n++] = quote ? shell_quote(prog[i])
					: strdup(prog[i])))
			goto nomem;
	return argv;
nomem:
	argv_free(argv);
	return NULL;
}

void argv_free(char **argv)
{
	if (!argv)
		return;
	for (char **p = argv; *p; p++)
		free(*p);
	free(argv);
}

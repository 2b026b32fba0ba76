/* Rail profile files: rules, writer, reader, names and directory. */
#include "sampler/profile.h"
#include "mrail.h"

#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- C locale ----------------------------------------------------------
 * An MPI application may call setlocale(LC_NUMERIC, "de_DE") and turn
 * "1.5e-06" into "1,5e-06": numbers are always written and read in the C
 * locale, whatever the process uses. */

static locale_t c_loc;
static pthread_once_t c_loc_once = PTHREAD_ONCE_INIT;

static void c_loc_init(void)
{
	c_loc = newlocale(LC_ALL_MASK, "C", (locale_t)0);
}

static locale_t c_locale(void)
{
	pthread_once(&c_loc_once, c_loc_init);
	return c_loc;
}

/* ---- rules shared by the reader and mrail_profile_check() ------------- */

enum key { K_DRIVER, K_LOCAL, K_LINK, K_PEER, K_DATE, K_TOOL, K_STAT,
	   K_EAGER, NKEYS };

static const struct {
	const char *name;
	int required;
} keys[NKEYS] = {
	[K_DRIVER] = {"driver", 1},
	[K_LOCAL] = {"local", 1},
	[K_LINK] = {"link-speed-mbps", 1},
	[K_PEER] = {"peer", 1},
	[K_DATE] = {"date", 1},
	[K_TOOL] = {"tool", 1},
	[K_STAT] = {"statistic", 1},
	[K_EAGER] = {"eager-threshold", 0},
};

/* Text field: printable ASCII, non-empty, fits cap with its NUL; spaces
 * only inside (the reader trims the ends, so they would not round-trip). */
static const char *text_rule(const char *v, size_t cap, int spaces)
{
	size_t n = strnlen(v, cap);
	if (n == cap)
		return "value too long";
	if (n == 0)
		return "empty value";
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)v[i];
		if (c < 0x20 || c > 0x7e || (c == ' ' && !spaces))
			return spaces ? "value has a non-printable character"
				      : "value has a space or non-printable "
					"character";
	}
	if (v[0] == ' ' || v[n - 1] == ' ')
		return "value starts or ends with a space";
	return NULL;
}

/* n decimal digits at s, or -1. */
static int digits(const char *s, int n)
{
	int v = 0;
	for (int i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

/* "YYYY-MM-DDTHH:MM:SSZ", a real UTC date (timegm round trip rejects
 * February 30th and the like). */
static const char *date_rule(const char *v, size_t cap)
{
	static const char *bad = "date is not ISO 8601 UTC "
				 "(YYYY-MM-DDTHH:MM:SSZ)";
	if (strnlen(v, cap) != 20 || v[4] != '-' || v[7] != '-' ||
	    v[10] != 'T' || v[13] != ':' || v[16] != ':' || v[19] != 'Z')
		return bad;
	struct tm tm = {0};
	tm.tm_year = digits(v, 4) - 1900;
	tm.tm_mon = digits(v + 5, 2) - 1;
	tm.tm_mday = digits(v + 8, 2);
	tm.tm_hour = digits(v + 11, 2);
	tm.tm_min = digits(v + 14, 2);
	tm.tm_sec = digits(v + 17, 2);
	if (tm.tm_year < 70 || tm.tm_mon < 0 || tm.tm_mday < 1 ||
	    tm.tm_hour < 0 || tm.tm_min < 0 || tm.tm_sec < 0)
		return bad;
	struct tm want = tm, back;
	time_t t = timegm(&tm);
	if (t == (time_t)-1 || !gmtime_r(&t, &back) ||
	    back.tm_year != want.tm_year || back.tm_mon != want.tm_mon ||
	    back.tm_mday != want.tm_mday || back.tm_hour != want.tm_hour ||
	    back.tm_min != want.tm_min || back.tm_sec != want.tm_sec)
		return bad;
	return NULL;
}

static const char *time_rule(double t)
{
	if (!mrail_profile_has(t))
		return NULL;
	if (!isfinite(t))
		return "non-finite time";
	if (t < 0)
		return "negative time";
	if (t < MRAIL_PROFILE_MIN_TIME)
		return "absurd time (below 1 ns)";
	if (t > MRAIL_PROFILE_MAX_TIME)
		return "absurd time (above 1 hour)";
	return NULL;
}

/* Sample i against its predecessor and the header. 0, or -1 and why. */
static int sample_rule(const struct mrail_profile *p, unsigned i, char *why,
		       size_t n)
{
	const struct mrail_profile_sample *s = &p->samples[i];
	const char *r;
	if (s->size == 0) {
		snprintf(why, n, "size 0 (sizes start at 1)");
	} else if (s->size > MRAIL_PROFILE_MAX_SIZE) {
		snprintf(why, n, "absurd size %llu (max 2^40)",
			 (unsigned long long)s->size);
	} else if (i > 0 && s->size == p->samples[i - 1].size) {
		snprintf(why, n, "duplicate size %llu",
			 (unsigned long long)s->size);
	} else if (i > 0 && s->size < p->samples[i - 1].size) {
		snprintf(why, n, "sizes not increasing: %llu after %llu",
			 (unsigned long long)s->size,
			 (unsigned long long)p->samples[i - 1].size);
	} else if ((r = time_rule(s->eager)) || (r = time_rule(s->rdv))) {
		snprintf(why, n, "%s at size %llu", r,
			 (unsigned long long)s->size);
	} else if (!mrail_profile_has(s->eager) && !mrail_profile_has(s->rdv)) {
		snprintf(why, n, "no time measured at size %llu",
			 (unsigned long long)s->size);
	} else if (p->eager_threshold && mrail_profile_has(s->eager) &&
		   s->size > p->eager_threshold) {
		snprintf(why, n, "eager time at size %llu, above "
			 "eager-threshold %llu", (unsigned long long)s->size,
			 (unsigned long long)p->eager_threshold);
	} else {
		return 0;
	}
	return -1;
}

static const char *u64_rule(enum key k, uint64_t v)
{
	if (k == K_LINK && v > MRAIL_PROFILE_MAX_MBPS)
		return "absurd link speed (max 10 Tb/s)";
	if (k == K_EAGER && (v == 0 || v > MRAIL_PROFILE_MAX_SIZE))
		return "absurd eager threshold (1 to 2^40)";
	return NULL;
}

/* The text fields, by key (NULL for numeric keys). */
static char *text_field(struct mrail_profile *p, enum key k, size_t *cap,
			int *spaces)
{
	*spaces = 0;
	switch (k) {
	case K_DRIVER: *cap = sizeof p->id.driver; return p->id.driver;
	case K_LOCAL: *cap = sizeof p->id.local; return p->id.local;
	case K_PEER: *cap = sizeof p->id.peer; return p->id.peer;
	case K_DATE: *cap = sizeof p->date; return p->date;
	case K_TOOL: *spaces = 1; *cap = sizeof p->tool; return p->tool;
	case K_STAT:
		*spaces = 1;
		*cap = sizeof p->statistic;
		return p->statistic;
	default: return NULL;
	}
}

static const char *field_rule(const struct mrail_profile *p, enum key k)
{
	size_t cap;
	int spaces;
	/* text_field() only computes addresses: the cast does not write. */
	const char *v = text_field((struct mrail_profile *)p, k, &cap, &spaces);
	if (k == K_DATE)
		return date_rule(v, cap);
	if (v)
		return text_rule(v, cap, spaces);
	return u64_rule(k, k == K_LINK ? p->id.link_mbps : p->eager_threshold);
}

int mrail_profile_check(const struct mrail_profile *p, char *err,
			size_t errlen)
{
	char why[160];
	const char *r;
	if (!err)
		errlen = 0;
	for (int k = 0; k < NKEYS; k++) {
		if (k == K_EAGER && !p->eager_threshold)
			continue;
		if ((r = field_rule(p, k))) {
			snprintf(err, errlen, "%s: %s", keys[k].name, r);
			return MRAIL_ERR_INVALID;
		}
	}
	if (p->nsamples == 0 || p->nsamples > MRAIL_PROFILE_MAX_SAMPLES) {
		snprintf(err, errlen, "%u samples (1 to %d)", p->nsamples,
			 MRAIL_PROFILE_MAX_SAMPLES);
		return MRAIL_ERR_INVALID;
	}
	for (unsigned i = 0; i < p->nsamples; i++)
		if (sample_rule(p, i, why, sizeof why)) {
			snprintf(err, errlen, "sample %u: %s", i, why);
			return MRAIL_ERR_INVALID;
		}
	return MRAIL_OK;
}

void mrail_profile_set_now(struct mrail_profile *p)
{
	time_t t = time(NULL);
	struct tm tm;
	if (!gmtime_r(&t, &tm) ||
	    !strftime(p->date, sizeof p->date, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(p->date, sizeof p->date, "1970-01-01T00:00:00Z");
}

/* ---- writer ------------------------------------------------------------ */

/* The shortest %g form that reads back as exactly t: readable and still
 * bit-exact (%.17g always is, but prints 1e-05 as 1.0000000000000001e-05). */
static void format_time(double t, char *buf, size_t n, locale_t loc)
{
	if (!mrail_profile_has(t)) {
		snprintf(buf, n, "-");
		return;
	}
	for (int prec = 6; prec <= 17; prec++) {
		snprintf(buf, n, "%.*g", prec, t);
		if (strtod_l(buf, NULL, loc) == t)
			return;
	}
}

static void format_lines(const struct mrail_profile *p, FILE *f,
			 locale_t loc)
{
	char e[40], r[40];
	fprintf(f, "mrail-profile %d\n", MRAIL_PROFILE_VERSION);
	fprintf(f, "driver: %s\nlocal: %s\nlink-speed-mbps: %llu\npeer: %s\n",
		p->id.driver, p->id.local,
		(unsigned long long)p->id.link_mbps, p->id.peer);
	fprintf(f, "date: %s\ntool: %s\nstatistic: %s\n", p->date, p->tool,
		p->statistic);
	if (p->eager_threshold)
		fprintf(f, "eager-threshold: %llu\n",
			(unsigned long long)p->eager_threshold);
	fprintf(f, "# size eager_seconds rdv_seconds\n");
	for (unsigned i = 0; i < p->nsamples; i++) {
		format_time(p->samples[i].eager, e, sizeof e, loc);
		format_time(p->samples[i].rdv, r, sizeof r, loc);
		fprintf(f, "%llu %s %s\n",
			(unsigned long long)p->samples[i].size, e, r);
	}
	fprintf(f, "end %u\n", p->nsamples);
}

int mrail_profile_format(const struct mrail_profile *p, FILE *f)
{
	locale_t loc = c_locale();
	if (!loc)
		return MRAIL_ERR_NOMEM;
	if (mrail_profile_check(p, NULL, 0))
		return MRAIL_ERR_INVALID;
	/* fprintf follows the thread's locale: switch it for the duration. */
	locale_t old = uselocale(loc);
	format_lines(p, f, loc);
	uselocale(old);
	return fflush(f) || ferror(f) ? MRAIL_ERR_IO : MRAIL_OK;
}

int mrail_profile_write(const struct mrail_profile *p, const char *path)
{
	char tmp[MRAIL_PROFILE_PATH_MAX + 16];
	if (mrail_profile_check(p, NULL, 0))
		return MRAIL_ERR_INVALID;
	if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmpXXXXXX", path) >=
	    sizeof tmp)
		return MRAIL_ERR_INVALID;
	int fd = mkstemp(tmp);
	if (fd < 0)
		return MRAIL_ERR_IO;
	FILE *f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		unlink(tmp);
		return MRAIL_ERR_IO;
	}
	int rc = fchmod(fd, 0644) ? MRAIL_ERR_IO : mrail_profile_format(p, f);
	/* fsync before rename: after a crash the name must not point to an
	 * empty file. */
	if (rc == MRAIL_OK && fsync(fd))
		rc = MRAIL_ERR_IO;
	if (fclose(f) && rc == MRAIL_OK)
		rc = MRAIL_ERR_IO;
	if (rc == MRAIL_OK && rename(tmp, path))
		rc = MRAIL_ERR_IO;
	if (rc != MRAIL_OK) {
		int saved = errno;
		unlink(tmp);
		errno = saved;
	}
	return rc;
}

/* ---- reader ------------------------------------------------------------ */

struct reader {
	FILE *f;
	const char *name;
	unsigned line;             /* number of the line being parsed */
	char *err;
	size_t errlen;
	struct mrail_profile *p;
	locale_t loc;
	unsigned seen;             /* header keys read (bit per key) */
	int ended;                 /* 'end' line read */
	char buf[MRAIL_PROFILE_MAX_LINE + 1];
};

__attribute__((format(printf, 2, 3)))
static int fail(struct reader *r, const char *fmt, ...)
{
	char why[200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	snprintf(r->err, r->errlen, "%s:%u: %s", r->name, r->line, why);
	return MRAIL_ERR_INVALID;
}

/*
 * Next line into r->buf without its "\n" (or "\r\n"). 1: a line, 0: end
 * of file, <0: error. Bytes are checked one by one so that a NUL, binary
 * data or an endless line is reported, not silently cut.
 */
static int read_line(struct reader *r)
{
	size_t n = 0;
	int c;
	r->line++;
	while ((c = getc(r->f)) != '\n') {
		if (c == EOF) {
			if (ferror(r->f))
				return fail(r, "read error"), MRAIL_ERR_IO;
			if (n == 0)
				return 0;
			return fail(r, "truncated file (last line has no "
				    "newline)");
		}
		if (c == '\r') {
			c = getc(r->f);
			if (c == '\n')
				break;
			return fail(r, "carriage return inside a line");
		}
		if ((c < 0x20 && c != '\t') || c > 0x7e)
			return fail(r, "invalid byte 0x%02x", (unsigned)c);
		if (n == MRAIL_PROFILE_MAX_LINE)
			return fail(r, "line longer than %d bytes",
				    MRAIL_PROFILE_MAX_LINE);
		r->buf[n++] = (char)c;
	}
	/* Trailing blanks are invisible in an editor: not an error. */
	while (n > 0 && (r->buf[n - 1] == ' ' || r->buf[n - 1] == '\t'))
		n--;
	r->buf[n] = '\0';
	return 1;
}

/* Decimal digits only (no sign, no spaces): 0 or -1. */
static int parse_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	if (!*s)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		unsigned d = (unsigned)(*s - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

/* "-" (not measured) or a C floating-point number, whole token. */
static int parse_time(struct reader *r, const char *tok, double *out)
{
	char *end;
	if (!strcmp(tok, "-")) {
		*out = NAN;
		return 0;
	}
	double t = strtod_l(tok, &end, r->loc);
	if (end == tok || *end)
		return fail(r, "malformed time '%s'", tok);
	if (!isfinite(t))
		return fail(r, "non-finite time '%s'", tok);
	*out = t;
	return 0;
}

static int parse_version(struct reader *r)
{
	const char *magic = "mrail-profile ";
	uint64_t v;
	if (strncmp(r->buf, magic, strlen(magic)) ||
	    parse_u64(r->buf + strlen(magic), &v))
		return fail(r, "not an mrail profile (first line must be "
			    "'mrail-profile %d')", MRAIL_PROFILE_VERSION);
	if (v != MRAIL_PROFILE_VERSION)
		return fail(r, "unsupported format version %s (this reader "
			    "knows %d)", r->buf + strlen(magic),
			    MRAIL_PROFILE_VERSION);
	return 0;
}

static int store_field(struct reader *r, enum key k, const char *v)
{
	size_t cap;
	int spaces;
	char *dst = text_field(r->p, k, &cap, &spaces);
	const char *why;
	if (dst) {
		if (strlen(v) >= cap)
			return fail(r, "value of '%s' too long (max %zu)",
				    keys[k].name, cap - 1);
		strcpy(dst, v);
	} else {
		uint64_t n;
		if (parse_u64(v, &n))
			return fail(r, "value of '%s' is not a number: '%s'",
				    keys[k].name, v);
		*(k == K_LINK ? &r->p->id.link_mbps : &r->p->eager_threshold) =
			n;
	}
	if ((why = field_rule(r->p, k)))
		return fail(r, "%s: %s", keys[k].name, why);
	return 0;
}

static int parse_header(struct reader *r)
{
	char *colon = strchr(r->buf, ':');
	size_t klen = colon ? (size_t)(colon - r->buf) : 0;
	if (!colon || klen == 0 || strspn(r->buf, "abcdefghijklmnopqrstuvwxyz-")
	    != klen)
		return fail(r, "malformed line (expected 'key: value', a "
			    "sample or 'end N')");
	if (r->p->nsamples)
		return fail(r, "header line after the samples");
	*colon = '\0';
	int k = 0;
	while (k < NKEYS && strcmp(keys[k].name, r->buf))
		k++;
	if (k == NKEYS)
		return fail(r, "unknown header key '%s'", r->buf);
	if (r->seen & (1u << k))
		return fail(r, "duplicate header key '%s'", r->buf);
	r->seen |= 1u << k;
	char *v = colon + 1 + strspn(colon + 1, " \t");
	return store_field(r, (enum key)k, v);
}

static int check_required(struct reader *r)
{
	for (int k = 0; k < NKEYS; k++)
		if (keys[k].required && !(r->seen & (1u << k)))
			return fail(r, "missing header key '%s'",
				    keys[k].name);
	return 0;
}

static int parse_sample(struct reader *r)
{
	static const char *ws = " \t";
	char *save, *tok[4];
	int n = 0;
	for (char *t = strtok_r(r->buf, ws, &save); t && n < 4;
	     t = strtok_r(NULL, ws, &save))
		tok[n++] = t;
	if (n != 3)
		return fail(r, "a sample has 3 fields: size eager_seconds "
			    "rdv_seconds");
	if (check_required(r))
		return MRAIL_ERR_INVALID;
	if (r->p->nsamples == MRAIL_PROFILE_MAX_SAMPLES)
		return fail(r, "more than %d samples",
			    MRAIL_PROFILE_MAX_SAMPLES);
	struct mrail_profile_sample *s = &r->p->samples[r->p->nsamples];
	char why[160];
	if (parse_u64(tok[0], &s->size))
		return fail(r, "malformed size '%s'", tok[0]);
	if (parse_time(r, tok[1], &s->eager) || parse_time(r, tok[2], &s->rdv))
		return MRAIL_ERR_INVALID;
	if (sample_rule(r->p, r->p->nsamples, why, sizeof why))
		return fail(r, "%s", why);
	r->p->nsamples++;
	return 0;
}

static int parse_end(struct reader *r)
{
	uint64_t n;
	if (r->buf[3] != ' ' || parse_u64(r->buf + 4, &n))
		return fail(r, "malformed 'end' line (expected 'end N')");
	if (check_required(r))
		return MRAIL_ERR_INVALID;
	if (r->p->nsamples == 0)
		return fail(r, "no samples");
	if (n != r->p->nsamples)
		return fail(r, "truncated or edited: 'end' says %llu samples, "
			    "the file has %u", (unsigned long long)n,
			    r->p->nsamples);
	r->ended = 1;
	return 0;
}

/* One line after the version line. */
static int parse_line(struct reader *r)
{
	const char *b = r->buf;
	if (r->ended)
		return fail(r, "data after the 'end' line");
	if (b[0] == '#' || b[strspn(b, " \t")] == '\0')
		return 0;
	if (b[0] >= '0' && b[0] <= '9')
		return parse_sample(r);
	if (!strncmp(b, "end ", 4) || !strcmp(b, "end"))
		return parse_end(r);
	return parse_header(r);
}

int mrail_profile_read(FILE *f, const char *name, struct mrail_profile *out,
		       char *err, size_t errlen)
{
	struct reader rd, *r = &rd;
	char dummy[1];
	int rc;
	*r = (struct reader){.f = f, .name = name, .err = err ? err : dummy,
			     .errlen = err ? errlen : sizeof dummy, .p = out,
			     .loc = c_locale()};
	memset(out, 0, sizeof *out);
	if (!r->loc) {
		rc = MRAIL_ERR_NOMEM;
	} else if ((rc = read_line(r)) <= 0) {
		if (rc == 0)
			rc = fail(r, "empty file");
	} else if ((rc = parse_version(r)) == 0) {
		while ((rc = read_line(r)) > 0 && (rc = parse_line(r)) == 0)
			;
		if (rc == 0 && !r->ended) {
			r->line--; /* the last line, not the one after it */
			rc = fail(r, "truncated file (no 'end N' line)");
		}
	}
	return rc < 0 ? rc : MRAIL_OK;
}

int mrail_profile_load(const char *path, struct mrail_profile *out,
		       char *err, size_t errlen)
{
	char dummy[1];
	if (!err) {
		err = dummy;
		errlen = sizeof dummy;
	}
	/* O_NONBLOCK: a FIFO planted under the name must not hang the
	 * engine's init; only regular files are read. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	struct stat st;
	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return errno == ENOENT ? MRAIL_ERR_NOT_FOUND : MRAIL_ERR_IO;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file", path);
		close(fd);
		return MRAIL_ERR_IO;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	FILE *f = fdopen(fd, "r");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		close(fd);
		return MRAIL_ERR_IO;
	}
	int rc = mrail_profile_read(f, path, out, err, errlen);
	fclose(f);
	return rc;
}

/* ---- file names and directory ------------------------------------------ */

static int join(char *buf, size_t len, const char *a, const char *b)
{
	int n = snprintf(buf, len, "%s%s", a, b);
	return n < 0 || (size_t)n >= len ? MRAIL_ERR_INVALID : MRAIL_OK;
}

static const char *home_dir(char *pwbuf, size_t n)
{
	const char *home = getenv("HOME");
	struct passwd pw, *res = NULL;
	if (home && *home)
		return home;
	if (getpwuid_r(getuid(), &pw, pwbuf, n, &res) || !res ||
	    !res->pw_dir || !*res->pw_dir)
		return NULL;
	return res->pw_dir;
}

int mrail_profile_dir(char *buf, size_t len)
{
	const char *d = getenv("MRAIL_PROFILE_DIR");
	char pwbuf[1024];
	if (d && *d)
		return join(buf, len, d, "");
	d = getenv("XDG_CACHE_HOME");
	if (d && d[0] == '/')
		return join(buf, len, d, "/mrail/profiles");
	if (!(d = home_dir(pwbuf, sizeof pwbuf)))
		return MRAIL_ERR_NOT_FOUND;
	return join(buf, len, d, "/.cache/mrail/profiles");
}

int mrail_profile_mkdir(const char *dir)
{
	char p[MRAIL_PROFILE_PATH_MAX];
	struct stat st;
	if (join(p, sizeof p, dir, ""))
		return errno = ENAMETOOLONG, MRAIL_ERR_IO;
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, 0755) && errno != EEXIST)
			return MRAIL_ERR_IO;
		*s = '/';
	}
	if (mkdir(p, 0755) && errno != EEXIST)
		return MRAIL_ERR_IO;
	if (stat(p, &st) || !S_ISDIR(st.st_mode))
		return errno = ENOTDIR, MRAIL_ERR_IO;
	return MRAIL_OK;
}

/* Appends field f escaped ([A-Za-z0-9.-] kept, the rest %XX). */
static size_t escape(char *out, size_t pos, size_t cap, const char *f)
{
	static const char hex[] = "0123456789ABCDEF";
	for (; *f && pos + 4 < cap; f++) {
		unsigned char c = (unsigned char)*f;
		/* A leading '.' would hide the file (or be "..."). */
		int keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			   (c >= '0' && c <= '9') || c == '-' ||
			   (c == '.' && pos > 0);
		if (keep) {
			out[pos++] = (char)c;
		} else {
			out[pos++] = '%';
			out[pos++] = hex[c >> 4];
			out[pos++] = hex[c & 15];
		}
	}
	out[pos] = '\0';
	return pos;
}

static uint64_t fnv1a(uint64_t h, const void *data, size_t n)
{
	const unsigned char *b = data;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * UINT64_C(0x100000001b3);
	return h;
}

static uint64_t identity_hash(const struct mrail_rail_identity *id)
{
	uint64_t h = UINT64_C(0xcbf29ce484222325);
	h = fnv1a(h, id->driver, strnlen(id->driver, sizeof id->driver) + 1);
	h = fnv1a(h, id->local, strnlen(id->local, sizeof id->local) + 1);
	h = fnv1a(h, &id->link_mbps, sizeof id->link_mbps);
	return fnv1a(h, id->peer, strnlen(id->peer, sizeof id->peer));
}

/* Room for a directory entry: NAME_MAX is 255 almost everywhere. */
#define NAME_ROOM 200

int mrail_profile_path(const char *dir, const struct mrail_rail_identity *id,
		       char *buf, size_t len)
{
	/* Every escaped byte takes at most 3; the fields are bounded. */
	char name[3 * (sizeof id->driver + sizeof id->local +
		       sizeof id->peer) + 64];
	char speed[32];
	size_t n = 0;
	if (!dir || !*dir || !memchr(id->driver, 0, sizeof id->driver) ||
	    !memchr(id->local, 0, sizeof id->local) ||
	    !memchr(id->peer, 0, sizeof id->peer))
		return MRAIL_ERR_INVALID;
	snprintf(speed, sizeof speed, "_%lluMbps_",
		 (unsigned long long)id->link_mbps);
	n = escape(name, n, sizeof name, id->driver);
	name[n++] = '_';
	n = escape(name, n, sizeof name, id->local);
	memcpy(name + n, speed, strlen(speed) + 1);
	n += strlen(speed);
	n = escape(name, n, sizeof name, id->peer);
	if (n > NAME_ROOM) {
		/* Cut, not at a half escape, and keep the names distinct. */
		n = NAME_ROOM - 20;
		while (n > 2 && (name[n - 1] == '%' || name[n - 2] == '%'))
			n--;
		snprintf(name + n, sizeof name - n, "~%016llx",
			 (unsigned long long)identity_hash(id));
	}
	char sep[2] = "/";
	int w = snprintf(buf, len, "%s%s%s.profile", dir,
			 dir[strlen(dir) - 1] == '/' ? "" : sep, name);
	return w < 0 || (size_t)w >= len ? MRAIL_ERR_INVALID : MRAIL_OK;
}

/*
 * The reader's rejections, one case per reason: each bad file must fail
 * with "path:line: reason" naming the right line.
 */
#include "sampler_test.h"
#include "mrail.h"

#include <stdarg.h>
#include <stdio.h>

static const char base[] =
	"mrail-profile 1\n"                              /* 1 */
	"driver: tcp\n"                                  /* 2 */
	"local: eth0\n"                                  /* 3 */
	"link-speed-mbps: 10000\n"                       /* 4 */
	"peer: node2/eth1\n"                             /* 5 */
	"date: 2024-05-01T12:34:56Z\n"                   /* 6 */
	"tool: mrail-sample 0.1.0\n"                     /* 7 */
	"statistic: median of 50, warm-up excluded\n"    /* 8 */
	"eager-threshold: 4\n"                           /* 9 */
	"# size eager_seconds rdv_seconds\n"             /* 10 */
	"1 1e-06 -\n"                                    /* 11 */
	"2 1.5e-06 -\n"                                  /* 12 */
	"4 2e-06 3e-06\n"                                /* 13 */
	"8 - 4e-06\n"                                    /* 14 */
	"end 4\n";                                       /* 15 */

static char dir[256];
static int ncases;

/* base with the first occurrence of old replaced by new (len bytes). */
static size_t edit(char *out, const char *old, const char *new, size_t len)
{
	const char *at = strstr(base, old);
	CHECK(at);
	size_t head = (size_t)(at - base);
	memcpy(out, base, head);
	memcpy(out + head, new, len);
	strcpy(out + head + len, at + strlen(old));
	return head + len + strlen(at + strlen(old));
}

/* Loads text (len bytes) from a file and checks the message. */
static void expect(const char *text, size_t len, unsigned line,
		   const char *reason)
{
	static struct mrail_profile p;
	char path[512], err[1024], prefix[600];
	snprintf(path, sizeof path, "%s/bad%d.profile", dir, ++ncases);
	FILE *f = fopen(path, "w");
	CHECK(f && fwrite(text, 1, len, f) == len && fclose(f) == 0);
	err[0] = '\0';
	int rc = mrail_profile_load(path, &p, err, sizeof err);
	snprintf(prefix, sizeof prefix, "%s:%u: ", path, line);
	if (rc != MRAIL_ERR_INVALID || strncmp(err, prefix, strlen(prefix)) ||
	    !strstr(err, reason)) {
		fprintf(stderr, "case %d: rc %d, got '%s'\n  want '%s%s'\n",
			ncases, rc, err, prefix, reason);
		exit(1);
	}
}

/* Parses text from memory: must load. */
static void accept_text(const char *text, size_t len)
{
	static struct mrail_profile p;
	char err[512];
	FILE *f = fmemopen((void *)text, len, "r");
	CHECK(f);
	int rc = mrail_profile_read(f, "mem", &p, err, sizeof err);
	if (rc)
		fprintf(stderr, "%s\n", err);
	CHECK_EQ(rc, MRAIL_OK);
	fclose(f);
}

static void reject(const char *old, const char *new, unsigned line,
		   const char *reason)
{
	char text[sizeof base + 4096];
	expect(text, edit(text, old, new, strlen(new)), line, reason);
}

static void reject_format(void)
{
	reject("mrail-profile 1", "mrail-profile 2", 1,
	       "unsupported format version 2");
	reject("mrail-profile 1\n", "", 1, "not an mrail profile");
	reject("mrail-profile 1", "mrail-profile one", 1,
	       "not an mrail profile");
	expect("", 0, 1, "empty file");
	reject("end 4\n", "", 14, "truncated file (no 'end N' line)");
	reject("end 4\n", "end 4", 15, "last line has no newline");
	expect(base, (size_t)(strstr(base, "8 - 4e-06") - base) + 6, 14,
	       "last line has no newline"); /* cut mid-line */
	reject("end 4", "end 3", 15, "'end' says 3 samples, the file has 4");
	reject("end 4", "end", 15, "malformed 'end' line");
	reject("end 4", "end four", 15, "malformed 'end' line");
	reject("end 4\n", "end 4\n\n", 16, "data after the 'end' line");
	reject("end 4\n", "end 4\n16 1 1\n", 16, "data after the 'end' line");
}

static void reject_header(void)
{
	reject("peer: node2/eth1\n", "peer: node2/eth1\ncolor: blue\n", 6,
	       "unknown header key 'color'");
	reject("driver: tcp", "driver tcp", 2, "malformed line");
	reject("driver: tcp", "Driver: tcp", 2, "malformed line");
	reject("local: eth0\n", "local: eth0\ndriver: x\n", 4,
	       "duplicate header key 'driver'");
	reject("date: 2024-05-01T12:34:56Z\n", "", 10,
	       "missing header key 'date'");
	reject("2024-05-01T12:34:56Z", "2024-02-30T12:34:56Z", 6,
	       "date is not ISO 8601 UTC");
	reject("2024-05-01T12:34:56Z", "2024-05-01 12:34:56", 6,
	       "date is not ISO 8601 UTC");
	reject("10000", "100000000", 4, "absurd link speed");
	reject("10000", "10G", 4, "'link-speed-mbps' is not a number");
	reject("eager-threshold: 4", "eager-threshold: 0", 9,
	       "absurd eager threshold");
	reject("driver: tcp", "driver: tcp-with-a-really-long-driver-name", 2,
	       "value of 'driver' too long (max 31)");
	reject("local: eth0", "local: eth 0", 3, "space");
	reject("tool: mrail-sample 0.1.0", "tool:", 7, "empty value");
	reject("4 2e-06 3e-06\n", "4 2e-06 3e-06\ntool: late\n", 14,
	       "header line after the samples");
}

static void reject_samples(void)
{
	reject("2 1.5e-06", "1 1.5e-06", 12, "duplicate size 1");
	reject("4 2e-06 3e-06", "16 - 3e-06", 14,
	       "sizes not increasing: 8 after 16");
	reject("4 2e-06", "4 -2e-06", 13, "negative time at size 4");
	reject("8 - 4e-06", "8 - -4e-06", 14, "negative time at size 8");
	reject("4 2e-06", "4 nan", 13, "non-finite time 'nan'");
	reject("4 2e-06", "4 inf", 13, "non-finite time 'inf'");
	reject("4 2e-06", "4 1e999", 13, "non-finite time '1e999'");
	reject("4 2e-06", "4 2e-06x", 13, "malformed time '2e-06x'");
	reject("4 2e-06", "4 2,5e-06", 13, "malformed time '2,5e-06'");
	reject("8 - 4e-06", "1099511627777 - 4e-06", 14,
	       "absurd size 1099511627777 (max 2^40)");
	reject("8 - 4e-06", "18446744073709551616 - 4e-06", 14,
	       "malformed size");
	reject("8 - 4e-06", "0x10 - 4e-06", 14, "malformed size '0x10'");
	reject("1 1e-06 -", "0 1e-06 -", 11, "size 0");
	reject("8 - 4e-06", "8 - 3601", 14, "absurd time (above 1 hour)");
	reject("8 - 4e-06", "8 - 1e-10", 14, "absurd time (below 1 ns)");
	reject("8 - 4e-06", "8 - 0", 14, "absurd time (below 1 ns)");
	reject("8 - 4e-06", "8 - -", 14, "no time measured at size 8");
	reject("8 - 4e-06", "8 5e-06 4e-06", 14,
	       "eager time at size 8, above eager-threshold 4");
	reject("8 - 4e-06", "8 - 4e-06 5", 14, "a sample has 3 fields");
	reject("8 - 4e-06", "8 -", 14, "a sample has 3 fields");
	reject("1 1e-06 -\n2 1.5e-06 -\n4 2e-06 3e-06\n8 - 4e-06\nend 4\n",
	       "end 0\n", 11, "no samples");
}

static void reject_limits(void)
{
	char text[sizeof base + 600], big[600];
	/* A line one byte too long; one at the limit is fine (comment). */
	memset(big, 'x', sizeof big);
	memcpy(big, "# ", 2);
	big[MRAIL_PROFILE_MAX_LINE] = '\n';
	big[MRAIL_PROFILE_MAX_LINE + 1] = '\0';
	accept_text(text, edit(text, "# size eager_seconds rdv_seconds\n", big,
			       strlen(big)));
	big[MRAIL_PROFILE_MAX_LINE] = 'x';
	big[MRAIL_PROFILE_MAX_LINE + 1] = '\n';
	big[MRAIL_PROFILE_MAX_LINE + 2] = '\0';
	reject("# size eager_seconds rdv_seconds\n", big, 10,
	       "line longer than 256 bytes");
	/* Binary content. */
	expect(text, edit(text, "tcp", "t\0p", 3), 2, "invalid byte 0x00");
	expect(text, edit(text, "tcp", "t\xc3\xa9", 3), 2, "invalid byte 0xc3");
	expect(text, edit(text, "tcp", "t\rp", 3), 2,
	       "carriage return inside a line");
	/* Too many samples. */
	size_t cap = sizeof base + 40 * (MRAIL_PROFILE_MAX_SAMPLES + 2);
	char *many = malloc(cap);
	CHECK(many);
	size_t n = edit(many, "1 1e-06 -\n2 1.5e-06 -\n4 2e-06 3e-06\n"
			      "8 - 4e-06\nend 4\n", "", 0);
	for (unsigned i = 1; i <= MRAIL_PROFILE_MAX_SAMPLES + 1; i++)
		n += (size_t)snprintf(many + n, cap - n, "%u - 1e-05\n", i);
	n += (size_t)snprintf(many + n, cap - n, "end %u\n",
			      MRAIL_PROFILE_MAX_SAMPLES + 1);
	expect(many, n, 10 + MRAIL_PROFILE_MAX_SAMPLES + 1,
	       "more than 1024 samples");
	free(many);
}

/* The edits above that should load, do: the base and CRLF files. */
static void accept(void)
{
	static struct mrail_profile p;
	char path[512], err[512], crlf[2 * sizeof base];
	size_t n = 0;
	for (const char *s = base; *s; s++) {
		if (*s == '\n')
			crlf[n++] = '\r';
		crlf[n++] = *s;
	}
	snprintf(path, sizeof path, "%s/good.profile", dir);
	FILE *f = fopen(path, "w");
	CHECK(f && fwrite(crlf, 1, n, f) == n && fclose(f) == 0);
	int rc = mrail_profile_load(path, &p, err, sizeof err);
	if (rc)
		fprintf(stderr, "%s\n", err);
	CHECK_EQ(rc, MRAIL_OK);
	CHECK_EQ(p.nsamples, 4);
	CHECK(p.samples[2].size == 4 && p.samples[2].rdv == 3e-6);
	CHECK(!mrail_profile_has(p.samples[3].eager));
	CHECK(p.eager_threshold == 4 && p.id.link_mbps == 10000);
	CHECK(!strcmp(p.statistic, "median of 50, warm-up excluded"));
}

int main(void)
{
	test_tmpdir(dir, sizeof dir);
	accept();
	reject_format();
	reject_header();
	reject_samples();
	reject_limits();
	test_rmdir(dir);
	printf("reject: %d cases ok\n", ncases);
	return 0;
}

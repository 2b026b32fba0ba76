/* Profile writer and reader: bit-exact round trips, checks, atomic write. */
#include "sampler_test.h"
#include "mrail.h"

#include <dirent.h>
#include <errno.h>
#include <locale.h>
#include <sys/stat.h>

/* A random valid time: log-uniform over the allowed range, then random
 * low mantissa bits, so that short decimal forms rarely suffice. */
static double random_time(uint64_t *rs)
{
	for (;;) {
		double t = exp(log(MRAIL_PROFILE_MIN_TIME) +
			       test_unif(rs) * (log(MRAIL_PROFILE_MAX_TIME) -
						log(MRAIL_PROFILE_MIN_TIME)));
		uint64_t bits;
		memcpy(&bits, &t, sizeof bits);
		bits ^= test_rand(rs) & ((UINT64_C(1) << 40) - 1);
		memcpy(&t, &bits, sizeof t);
		if (t >= MRAIL_PROFILE_MIN_TIME && t <= MRAIL_PROFILE_MAX_TIME)
			return t;
	}
}

static void random_profile(struct mrail_profile *p, uint64_t *rs)
{
	test_profile_header(p);
	unsigned n = 1 + (unsigned)(test_rand(rs) % MRAIL_PROFILE_MAX_SAMPLES);
	uint64_t size = 0;
	p->eager_threshold = test_rand(rs) % 2 ? 0 : 65536;
	for (unsigned i = 0; i < n; i++) {
		size += 1 + test_rand(rs) % (MRAIL_PROFILE_MAX_SIZE / 2048);
		int which = (int)(test_rand(rs) % 3); /* eager, rdv, both */
		int eager_ok = !p->eager_threshold || size <= p->eager_threshold;
		if (!eager_ok)
			which = 1;
		test_add(p, size, which != 1 ? random_time(rs) : NAN,
			 which != 0 ? random_time(rs) : NAN);
	}
}

static int same_time(double a, double b)
{
	if (!mrail_profile_has(a) || !mrail_profile_has(b))
		return mrail_profile_has(a) == mrail_profile_has(b);
	return memcmp(&a, &b, sizeof a) == 0;
}

static void check_equal(const struct mrail_profile *a,
			const struct mrail_profile *b)
{
	CHECK(!strcmp(a->id.driver, b->id.driver));
	CHECK(!strcmp(a->id.local, b->id.local));
	CHECK(!strcmp(a->id.peer, b->id.peer));
	CHECK(a->id.link_mbps == b->id.link_mbps);
	CHECK(!strcmp(a->date, b->date));
	CHECK(!strcmp(a->tool, b->tool));
	CHECK(!strcmp(a->statistic, b->statistic));
	CHECK(a->eager_threshold == b->eager_threshold);
	CHECK_EQ(a->nsamples, b->nsamples);
	for (unsigned i = 0; i < a->nsamples; i++) {
		CHECK(a->samples[i].size == b->samples[i].size);
		CHECK(same_time(a->samples[i].eager, b->samples[i].eager));
		CHECK(same_time(a->samples[i].rdv, b->samples[i].rdv));
	}
}

static void test_round_trip(const char *dir)
{
	static struct mrail_profile p, q;
	char path[512], err[512];
	uint64_t rs = 0x5eed;
	snprintf(path, sizeof path, "%s/rt.profile", dir);
	for (int iter = 0; iter < 200; iter++) {
		random_profile(&p, &rs);
		CHECK_EQ(mrail_profile_check(&p, err, sizeof err), MRAIL_OK);
		CHECK_EQ(mrail_profile_write(&p, path), MRAIL_OK);
		int rc = mrail_profile_load(path, &q, err, sizeof err);
		if (rc)
			fprintf(stderr, "%s\n", err);
		CHECK_EQ(rc, MRAIL_OK);
		check_equal(&p, &q);
	}
	/* Extremes of every range. */
	test_profile_header(&p);
	test_add(&p, 1, MRAIL_PROFILE_MIN_TIME, MRAIL_PROFILE_MAX_TIME);
	test_add(&p, MRAIL_PROFILE_MAX_SIZE, NAN, MRAIL_PROFILE_MAX_TIME);
	p.id.link_mbps = MRAIL_PROFILE_MAX_MBPS;
	CHECK_EQ(mrail_profile_write(&p, path), MRAIL_OK);
	CHECK_EQ(mrail_profile_load(path, &q, err, sizeof err), MRAIL_OK);
	check_equal(&p, &q);
}

/* The file is complete or absent: no temporary left, readable mode. */
static void test_atomic_write(const char *dir)
{
	static struct mrail_profile p;
	char path[512];
	struct stat st;
	test_profile_header(&p);
	test_add(&p, 1, 1e-6, NAN);
	snprintf(path, sizeof path, "%s/atomic/a.profile", dir);
	CHECK(mrail_profile_write(&p, path) == MRAIL_ERR_IO); /* no dir */
	snprintf(path, sizeof path, "%s/atomic", dir);
	CHECK_EQ(mrail_profile_mkdir(path), MRAIL_OK);
	snprintf(path, sizeof path, "%s/atomic/a.profile", dir);
	CHECK_EQ(mrail_profile_write(&p, path), MRAIL_OK);
	CHECK_EQ(mrail_profile_write(&p, path), MRAIL_OK); /* replaces */
	CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0644);
	p.nsamples = 0; /* invalid: refused, old file untouched */
	CHECK(mrail_profile_write(&p, path) == MRAIL_ERR_INVALID);
	CHECK_EQ(mrail_profile_load(path, &p, NULL, 0), MRAIL_OK);
	CHECK_EQ(p.nsamples, 1);
	snprintf(path, sizeof path, "%s/atomic", dir);
	DIR *d = opendir(path);
	struct dirent *e;
	int files = 0;
	CHECK(d);
	while ((e = readdir(d)))
		if (e->d_name[0] != '.') {
			CHECK(!strcmp(e->d_name, "a.profile"));
			files++;
		}
	closedir(d);
	CHECK_EQ(files, 1);
}

/* Format refuses what the reader would reject, writing nothing. */
static void test_format_checks(void)
{
	static struct mrail_profile p;
	char *buf = NULL, err[256];
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	test_profile_header(&p);
	test_add(&p, 4, 1e-6, NAN);
	test_add(&p, 2, 1e-6, NAN);
	CHECK(mrail_profile_format(&p, f) == MRAIL_ERR_INVALID);
	fflush(f);
	CHECK_EQ(len, 0);
	CHECK(mrail_profile_check(&p, err, sizeof err) == MRAIL_ERR_INVALID);
	CHECK(strstr(err, "sizes not increasing: 2 after 4"));
	p.samples[1].size = 8;
	p.samples[1].rdv = -1;
	CHECK(mrail_profile_check(&p, err, sizeof err) == MRAIL_ERR_INVALID);
	CHECK(strstr(err, "negative time at size 8"));
	p.samples[1].rdv = INFINITY;
	CHECK(mrail_profile_check(&p, err, sizeof err) == MRAIL_ERR_INVALID);
	CHECK(strstr(err, "non-finite time"));
	p.samples[1].rdv = 2e-6;
	CHECK_EQ(mrail_profile_check(&p, err, sizeof err), MRAIL_OK);
	strcpy(p.tool, " lead");
	CHECK(mrail_profile_check(&p, err, sizeof err) == MRAIL_ERR_INVALID);
	CHECK(strstr(err, "tool:"));
	strcpy(p.tool, "t");
	strcpy(p.id.peer, "has space");
	CHECK(mrail_profile_check(&p, err, sizeof err) == MRAIL_ERR_INVALID);
	CHECK(strstr(err, "peer:"));
	strcpy(p.id.peer, "p");
	memset(p.id.driver, 'x', sizeof p.id.driver); /* no NUL */
	CHECK(mrail_profile_check(&p, err, sizeof err) == MRAIL_ERR_INVALID);
	CHECK(strstr(err, "driver: value too long"));
	strcpy(p.id.driver, "tcp");
	strcpy(p.date, "2024-13-01T00:00:00Z");
	CHECK(mrail_profile_check(&p, err, sizeof err) == MRAIL_ERR_INVALID);
	CHECK(strstr(err, "date"));
	mrail_profile_set_now(&p);
	CHECK_EQ(mrail_profile_check(&p, err, sizeof err), MRAIL_OK);
	p.eager_threshold = 4; /* eager measured at 8 is now inconsistent */
	p.samples[1].eager = 3e-6;
	CHECK(mrail_profile_check(&p, err, sizeof err) == MRAIL_ERR_INVALID);
	CHECK(strstr(err, "above eager-threshold 4"));
	fclose(f);
	free(buf);
}

/* The text is what the documentation shows. */
static void test_text(void)
{
	static struct mrail_profile p;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	test_profile_header(&p);
	p.eager_threshold = 32768;
	test_add(&p, 1, 1e-05, NAN);
	test_add(&p, 2, 1.25e-05, 0.1);
	test_add(&p, 65536, NAN, 0.000123456789012345);
	CHECK_EQ(mrail_profile_format(&p, f), MRAIL_OK);
	fclose(f);
	const char *want = "mrail-profile 1\n"
			   "driver: tcp\n"
			   "local: eth0\n"
			   "link-speed-mbps: 10000\n"
			   "peer: node2/eth1\n"
			   "date: 2024-05-01T12:34:56Z\n"
			   "tool: mrail-sample 0.1.0\n"
			   "statistic: median of 50, warm-up excluded\n"
			   "eager-threshold: 32768\n"
			   "# size eager_seconds rdv_seconds\n"
			   "1 1e-05 -\n"
			   "2 1.25e-05 0.1\n"
			   "65536 - 0.000123456789012345\n"
			   "end 3\n";
	if (strcmp(buf, want))
		fprintf(stderr, "got:\n%s", buf);
	CHECK(!strcmp(buf, want));
	free(buf);
}

/* A locale whose decimal point is a comma: an installed one, else one
 * compiled into dir (glibc reads LOCPATH). NULL if neither works. */
static const char *comma_locale(const char *dir)
{
	static const char *locs[] = {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8",
				     "fr_FR.utf8"};
	char cmd[600];
	for (unsigned i = 0; i < 4; i++)
		if (setlocale(LC_NUMERIC, locs[i]))
			return locs[i];
	snprintf(cmd, sizeof cmd, "localedef -i de_DE -f UTF-8 '%s/de_DE.UTF-8'"
		 " >/dev/null 2>&1", dir);
	if (system(cmd) != 0)
		return NULL;
	setenv("LOCPATH", dir, 1);
	return setlocale(LC_NUMERIC, "de_DE.UTF-8") ? "de_DE.UTF-8" : NULL;
}

/* An application's LC_NUMERIC must not change the file. */
static void test_locale(const char *dir)
{
	static struct mrail_profile p, q;
	char path[512], err[256], text[64];
	const char *used = comma_locale(dir);
	if (!used) {
		printf("no comma locale available: locale check skipped\n");
		return;
	}
	snprintf(text, sizeof text, "%g", 1.5);
	CHECK(!strcmp(text, "1,5")); /* the trap is armed */
	test_profile_header(&p);
	test_add(&p, 1, 1.5e-6, NAN);
	snprintf(path, sizeof path, "%s/loc.profile", dir);
	CHECK_EQ(mrail_profile_write(&p, path), MRAIL_OK);
	FILE *f = fopen(path, "r");
	CHECK(f);
	while (fgets(text, sizeof text, f))
		if (text[0] == '1')
			CHECK(!strcmp(text, "1 1.5e-06 -\n"));
	fclose(f);
	CHECK_EQ(mrail_profile_load(path, &q, err, sizeof err), MRAIL_OK);
	CHECK(q.samples[0].eager == 1.5e-6);
	setlocale(LC_NUMERIC, "C");
	printf("locale %s: ok\n", used);
}

static void test_load_errors(const char *dir)
{
	static struct mrail_profile p;
	char path[512], err[512];
	snprintf(path, sizeof path, "%s/none.profile", dir);
	CHECK(mrail_profile_load(path, &p, err, sizeof err) ==
	      MRAIL_ERR_NOT_FOUND);
	CHECK(strstr(err, path));
	CHECK(mrail_profile_load(dir, &p, err, sizeof err) == MRAIL_ERR_IO);
	CHECK(strstr(err, "not a regular file"));
	snprintf(path, sizeof path, "%s/fifo", dir);
	CHECK(mkfifo(path, 0600) == 0);
	CHECK(mrail_profile_load(path, &p, err, sizeof err) == MRAIL_ERR_IO);
	CHECK(mrail_profile_load(path, &p, NULL, 0) == MRAIL_ERR_IO);
}

int main(void)
{
	char dir[256];
	test_tmpdir(dir, sizeof dir);
	test_round_trip(dir);
	test_atomic_write(dir);
	test_format_checks();
	test_text();
	test_locale(dir);
	test_load_errors(dir);
	test_rmdir(dir);
	printf("profile: ok\n");
	return 0;
}

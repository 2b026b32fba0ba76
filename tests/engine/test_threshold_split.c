/*
 * With default settings and profiles on every rail, `split` sends a
 * medium message by rendezvous cut over the rails as soon as that is
 * predicted to beat the best rail alone, not only from where rendezvous
 * pays on one rail (strategies/split/split.c, split_eager_max). Both
 * ranks file hand-made profiles for two loopback rails, 100 and 40 MB/s,
 * 10 us, on which eager beats rendezvous on one rail up to about 200 KB;
 * cut over both, rendezvous pays from about 7 KB (20 us of RTS and RTR
 * against the time the slow rail saves; docs/split.md, "Where rendezvous
 * starts"). Checks that a 4000-byte message goes eager (no chunk), 24000-
 * and 60000-byte ones (eager before, by every rail's threshold) go by
 * rendezvous in chunks on both rails, and all arrive intact. With
 * TEST_EARLY_RDV_OFF (meson sets MRAIL_STRATEGY=split:early_rdv=0) the
 * rails' own switch holds: both go eager.
 */
#include "harness.h"
#include "sampler/profile.h"

#include <math.h>

#define NRAILS 2

/* eager 10 us + 1.01 x s/bw (a copy), rendezvous 30 us + s/bw: they
 * cross at 2 ms x bw (200 KB at 100 MB/s); `slow` scales time for the
 * 40 MB/s rail with the same crossing. */
static void file_profile(unsigned rail, double bw, double copy)
{
	static struct mrail_profile p;
	char dir[MRAIL_PROFILE_PATH_MAX], path[MRAIL_PROFILE_PATH_MAX];
	const double sz[] = {1, 4096, 16384, 65536, 262144, 1 << 20};
	memset(&p, 0, sizeof p);
	snprintf(p.id.driver, sizeof p.id.driver, "tcp");
	snprintf(p.id.local, sizeof p.id.local, "lo@127.0.0.1");
	snprintf(p.id.peer, sizeof p.id.peer, "lo@127.0.0.1#%u", rail);
	snprintf(p.tool, sizeof p.tool, "test_threshold_split");
	snprintf(p.statistic, sizeof p.statistic, "made up");
	mrail_profile_set_now(&p);
	p.nsamples = sizeof sz / sizeof *sz;
	for (unsigned i = 0; i < p.nsamples; i++) {
		p.samples[i].size = (uint64_t)sz[i];
		p.samples[i].eager = sz[i] >= (1 << 20)
			? NAN : 10e-6 + copy * sz[i] / bw;
		p.samples[i].rdv = 30e-6 + sz[i] / bw;
	}
	CHECK_RC(mrail_profile_dir(dir, sizeof dir));
	CHECK_RC(mrail_profile_mkdir(dir));
	CHECK_RC(mrail_profile_path(dir, &p.id, path, sizeof path));
	CHECK_RC(mrail_profile_write(&p, path));
}

static void chunks(mrail_engine_t *e, uint32_t peer, uint64_t *c)
{
	for (unsigned r = 0; r < NRAILS; r++) {
		struct mrail_rail_stats st;
		CHECK_RC(mrail_rail_stats(e, peer, r, &st));
		c[r] = st.tx_chunks + st.rx_chunks;
	}
}

/* Moves one message of len bytes rank 0 -> 1, checks its content;
 * returns on how many rails it went in chunks (0: eager). */
static unsigned rails_with_chunks(mrail_engine_t *e, uint32_t me, size_t len,
				  uint64_t id)
{
	static unsigned char buf[65536];
	uint64_t before[NRAILS], after[NRAILS];
	mrail_request_t *r;
	mrail_status_t st;
	unsigned n = 0;
	chunks(e, 1 - me, before);
	if (me == 0) {
		pattern_fill(buf, len, id);
		CHECK_RC(mrail_isend(e, 1, buf, len, 9, &r));
	} else {
		memset(buf, 0, sizeof buf);
		CHECK_RC(mrail_irecv(e, 0, buf, len, 9, MRAIL_TAG_MASK_ALL,
				     &r));
	}
	CHECK_RC(mrail_wait(e, r, &st));
	CHECK_RC(st.error);
	if (me == 1) {
		CHECK_EQ(st.length, len);
		CHECK_EQ(pattern_check(buf, len, id), len);
	}
	test_barrier(e);
	chunks(e, 1 - me, after);
	for (unsigned k = 0; k < NRAILS; k++)
		n += after[k] > before[k];
	return n;
}

int main(void)
{
	int off = getenv("TEST_EARLY_RDV_OFF") != NULL;
	file_profile(0, 100e6, 1.01);
	file_profile(1, 40e6, 1.004);
	mrail_engine_t *e = test_engine();
	uint32_t me = mrail_rank(e);
	CHECK_EQ(mrail_size(e), 2);
	CHECK_EQ(mrail_rail_count(e, 1 - me), NRAILS);
	for (unsigned r = 0; r < NRAILS; r++) {
		struct mrail_rail_info info;
		CHECK_RC(mrail_rail_info(e, 1 - me, r, &info));
		if (strcmp(info.model, "profile")) {
			fprintf(stderr, "rail %u model is '%s', not the "
				"profile\n", r, info.model);
			return 1;
		}
		/* each rail alone: rendezvous only from about 200 KB */
		CHECK(info.threshold > 150000);
	}
	CHECK_EQ(rails_with_chunks(e, me, 4000, 1), 0);
	CHECK_EQ(rails_with_chunks(e, me, 24000, 2), off ? 0 : NRAILS);
	CHECK_EQ(rails_with_chunks(e, me, 60000, 3), off ? 0 : NRAILS);
	CHECK_RC(mrail_engine_destroy(e));
	return 0;
}

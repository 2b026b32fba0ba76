/*
 * The rendezvous threshold comes from the rail's profile unless the user
 * set one. Both ranks file a hand-made profile for the loopback rail whose
 * eager and rendezvous curves cross at 43691 bytes, then create the engine
 * and check the rail's model, and which protocol a 40000- and a 47000-byte
 * message take (rendezvous moves the payload as a chunk, eager does not).
 * With TEST_USER_EAGER_MAX set (meson also sets MRAIL_EAGER_MAX=32768),
 * both must go rendezvous.
 */
#include "harness.h"
#include "sampler/profile.h"

#include <math.h>

static void file_profile(void)
{
	static struct mrail_profile p;
	char dir[MRAIL_PROFILE_PATH_MAX], path[MRAIL_PROFILE_PATH_MAX];
	const struct mrail_profile_sample s[] = {
		{1, 10e-6, 25e-6},
		{32768, 20e-6, 30e-6},
		{49152, 40e-6, 35e-6},
		{65536, 60e-6, 45e-6},
		{1 << 20, NAN, 300e-6},
	};
	memset(&p, 0, sizeof p);
	snprintf(p.id.driver, sizeof p.id.driver, "tcp");
	snprintf(p.id.local, sizeof p.id.local, "lo@127.0.0.1");
	snprintf(p.id.peer, sizeof p.id.peer, "lo@127.0.0.1#0");
	snprintf(p.tool, sizeof p.tool, "test_threshold");
	snprintf(p.statistic, sizeof p.statistic, "made up");
	mrail_profile_set_now(&p);
	p.nsamples = sizeof s / sizeof *s;
	memcpy(p.samples, s, sizeof s);
	CHECK_RC(mrail_profile_dir(dir, sizeof dir));
	CHECK_RC(mrail_profile_mkdir(dir));
	CHECK_RC(mrail_profile_path(dir, &p.id, path, sizeof path));
	CHECK_RC(mrail_profile_write(&p, path));
}

static uint64_t chunks(mrail_engine_t *e, uint32_t peer)
{
	struct mrail_rail_stats st;
	CHECK_RC(mrail_rail_stats(e, peer, 0, &st));
	return st.tx_chunks + st.rx_chunks;
}

static int goes_rendezvous(mrail_engine_t *e, uint32_t me, size_t len)
{
	static char buf[65536];
	mrail_request_t *r;
	uint64_t before = chunks(e, 1 - me);
	if (me == 0)
		CHECK_RC(mrail_isend(e, 1, buf, len, 9, &r));
	else
		CHECK_RC(mrail_irecv(e, 0, buf, len, 9, MRAIL_TAG_MASK_ALL, &r));
	CHECK_RC(mrail_wait(e, r, NULL));
	test_barrier(e);
	return chunks(e, 1 - me) > before;
}

int main(void)
{
	int user = getenv("TEST_USER_EAGER_MAX") != NULL;
	file_profile();
	mrail_engine_t *e = test_engine();
	uint32_t me = mrail_rank(e);
	struct mrail_rail_info info;
	CHECK_EQ(mrail_size(e), 2);
	CHECK_RC(mrail_rail_info(e, 1 - me, 0, &info));
	if (strcmp(info.model, "profile")) {
		fprintf(stderr, "rail model is '%s', not the profile\n",
			info.model);
		return 1;
	}
	CHECK(info.threshold > 43000 && info.threshold < 44000);
	CHECK_EQ(goes_rendezvous(e, me, 40000), user);
	CHECK_EQ(goes_rendezvous(e, me, 47000), 1);
	CHECK_RC(mrail_engine_destroy(e));
	return 0;
}

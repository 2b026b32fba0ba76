/*
 * A standalone engine named by its job (mrail_set_job_rank and
 * mrail_peer_add_ranked, what the Open MPI MTL does): its state dump names
 * itself and its peers by job rank, not by the order peers were added in,
 * and the calls refuse what would make the names lie. Three processes;
 * each adds its peers in rank order (peer id == rank) but the job numbers
 * them backwards (job rank = 2 - rank), so the two numberings differ.
 */
#include "standalone.h"

#define N 3
#define TAG 7

static uint32_t job_rank_of(uint32_t rank)
{
	return N - 1 - rank;
}

/* The text mrail_engine_dump() writes, NUL-terminated. */
static char *dump_text(mrail_engine_t *e)
{
	static char text[1 << 16];
	FILE *f = tmpfile();
	CHECK(f);
	CHECK_RC(mrail_engine_dump(e, fileno(f)));
	rewind(f);
	size_t n = fread(text, 1, sizeof text - 1, f);
	text[n] = 0;
	fclose(f);
	return text;
}

static void child(int fd, uint32_t rank, void *arg)
{
	uint8_t blob[MRAIL_ADDR_MAX];
	size_t len = sizeof blob;
	mrail_engine_t *e;
	struct mrail_config cfg;
	uint32_t me = job_rank_of(rank);

	(void)arg;

	alarm(60);
	CHECK_RC(mrail_config_init(&cfg));
	cfg.bootstrap = 0;
	CHECK_RC(mrail_engine_create(&cfg, &e));
	CHECK_EQ(mrail_set_job_rank(e, N, N), MRAIL_ERR_INVALID);
	CHECK_EQ(mrail_set_job_rank(e, 0, 0), MRAIL_ERR_INVALID);
	CHECK_RC(mrail_set_job_rank(e, me, N));
	CHECK_RC(mrail_address(e, blob, &len));
	send_blob(fd, blob, (uint32_t)len);
	for (uint32_t p = 0; p < N; p++) {
		mrail_peer_t id;
		uint32_t l = recv_blob(fd, blob, sizeof blob);
		CHECK_EQ(mrail_peer_add_ranked(e, blob, l, UINT32_MAX, &id),
			 MRAIL_ERR_INVALID);
		CHECK_RC(mrail_peer_add_ranked(e, blob, l, job_rank_of(p), &id));
		CHECK_EQ(id, p);
	}
	/* Too late: log lines and traces already named this process. */
	CHECK_EQ(mrail_set_job_rank(e, me, N), MRAIL_ERR_INVALID);

	/* One message each way with every peer, so every gate is up. */
	mrail_request_t *rq[2 * N] = {0};
	uint32_t in[N], out = me;
	for (uint32_t p = 0; p < N; p++) {
		if (p == rank)
			continue;
		CHECK_RC(mrail_irecv(e, p, &in[p], sizeof in[p], TAG,
				     MRAIL_TAG_MASK_ALL, &rq[2 * p]));
		CHECK_RC(mrail_isend(e, p, &out, sizeof out, TAG,
				     &rq[2 * p + 1]));
	}
	CHECK_RC(mrail_wait_all(e, 2 * N, rq, NULL));
	for (uint32_t p = 0; p < N; p++)
		if (p != rank)
			CHECK_EQ(in[p], job_rank_of(p));

	char *d = dump_text(e);
	char want[64];
	snprintf(want, sizeof want, "mrail engine rank %u of %u ", me, N);
	if (strncmp(d, want, strlen(want))) {
		fprintf(stderr, "dump of job rank %u starts:\n%.200s\n", me, d);
		exit(1);
	}
	for (uint32_t p = 0; p < N; p++) {
		if (p == rank)
			continue;
		snprintf(want, sizeof want, "\nrank %u: ", job_rank_of(p));
		if (!strstr(d, want)) {
			fprintf(stderr, "job rank %u's dump does not name its "
				"peer %u as rank %u:\n%s\n", me, p,
				job_rank_of(p), d);
			exit(1);
		}
	}
	job_barrier(e, rank, N, NULL);
	CHECK_RC(mrail_engine_destroy(e));
	_exit(0);
}

int main(void)
{
	int status[N], bad = 0;

	job_spawn(N, child, NULL, status);
	for (uint32_t i = 0; i < N; i++) {
		if (!WIFEXITED(status[i]) || WEXITSTATUS(status[i])) {
			fprintf(stderr, "process %u: status %#x\n", i,
				status[i]);
			bad = 1;
		}
	}
	if (!bad)
		printf("job ranks: dumps name 3 processes by job rank\n");
	return bad;
}

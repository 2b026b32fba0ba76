/* Built-in strategies: plans cover the payload exactly, options parse,
 * eager decisions pick the expected rail and packing count. */
#include "../check.h"
#include "mrail.h"
#include "strategies/strategy.h"
#include "sampler/predict.h"

/* What the engine's views predict: time_scale x (the model, or the
 * nominal latency + bytes / bandwidth). */
static double test_predict(const struct mrail_rail_view *v, uint64_t bytes)
{
	double t = v->model ? mrail_predict(v->model, bytes)
			    : v->latency + (double)bytes / v->bandwidth;
	return v->time_scale * t;
}

static void check_plan(const struct mrail_chunk *c, int n, unsigned nrails,
		       uint64_t len)
{
	uint64_t off = 0;
	CHECK(n >= 1 && n <= MRAIL_MAX_CHUNKS);
	for (int i = 0; i < n; i++) {
		CHECK(c[i].rail < nrails);
		CHECK(c[i].offset == off);
		CHECK(c[i].length > 0);
		off += c[i].length;
	}
	CHECK(off == len);
}

/* A queue view of `n` messages of the given record sizes. */
static struct mrail_send_queue queue(const size_t *bytes, unsigned n,
				     size_t room)
{
	struct mrail_send_queue q = {n, 0, bytes, room};
	return q;
}

/* The send-queue helpers every strategy uses for its packing count. */
static void test_queue_helpers(void)
{
	const size_t rec[5] = {100, 200, 300, 50, 10};
	struct mrail_send_queue q = queue(rec, 5, 600);
	CHECK_EQ(mrail_send_queue_fit(&q), 3);     /* 100+200+300 = 600 */
	q.packet_room = 599;
	CHECK_EQ(mrail_send_queue_fit(&q), 2);
	q.packet_room = 10000;
	CHECK_EQ(mrail_send_queue_fit(&q), 5);     /* all known ones fit */
	q.packet_room = 50;
	CHECK_EQ(mrail_send_queue_fit(&q), 1);     /* the head always goes */
	CHECK_EQ(mrail_send_queue_bytes(&q, 0), 0);
	CHECK_EQ(mrail_send_queue_bytes(&q, 2), 300);
	CHECK_EQ(mrail_send_queue_bytes(&q, 5), 660);
	CHECK_EQ(mrail_send_queue_bytes(&q, 9), 660); /* capped at known */
}

/* Every strategy that aggregates packs exactly what fits. */
static void test_packing(struct mrail_rail_view *v, unsigned n)
{
	const char *names[] = {"single", "iso", "pin", "split", "bw"};
	const size_t rec[4] = {1000, 1000, 1000, 1000};
	struct mrail_send_queue q = queue(rec, 4, 3500);
	for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
		const struct mrail_strategy_ops *o =
			mrail_strategy_find(names[i]);
		void *st = NULL;
		unsigned count = 0;
		CHECK(o && o->init("", &st) == MRAIL_OK);
		int r = o->eager_rail(st, NULL, v, n, &q, &count);
		CHECK(r >= 0 && (unsigned)r < n && v[r].idle);
		CHECK_EQ(count, 3);
		o->fini(st);
	}
}

/* greedy spreads: one message per packet, on the first idle rail, and
 * whichever rail becomes idle takes the next one. */
static void test_greedy_packets(struct mrail_rail_view *v, unsigned n)
{
	const struct mrail_strategy_ops *g = mrail_strategy_find("greedy");
	const size_t rec[4] = {100, 100, 100, 100};
	struct mrail_send_queue q = queue(rec, 4, 65536);
	void *st = NULL;
	unsigned count = 0;
	CHECK(g && g->rail_idle && g->init("", &st) == MRAIL_OK);
	CHECK_EQ(g->eager_rail(st, NULL, v, n, &q, &count), 0);
	CHECK_EQ(count, 1);
	for (unsigned i = 0; i < n; i++) {
		if (!v[i].idle)
			continue;
		count = 0;
		CHECK_EQ(g->rail_idle(st, NULL, v, n, i, &q, &count), 1);
		CHECK_EQ(count, 1);
	}
	g->fini(st);
	/* The others have no rail_idle: eager_rail decides. */
	CHECK(!mrail_strategy_find("single")->rail_idle);
	CHECK(!mrail_strategy_find("split")->rail_idle);
}

/* aggreg: eager packets aggregate behind the rail fastest for them,
 * others stay idle; payloads whole on the rail that finishes first. */
static void test_aggreg(void)
{
	const struct mrail_strategy_ops *a = mrail_strategy_find("aggreg");
	const size_t rec[4] = {1000, 1000, 1000, 1000};
	struct mrail_send_queue q = queue(rec, 4, 3500);
	struct mrail_chunk c[MRAIL_MAX_CHUNKS];
	void *st = NULL;
	unsigned count = 0;
	struct mrail_rail_view v[3] = {
		{0, 1, 0, 1e9, 1e-5, 32768, NULL, 0, 1, test_predict},
		{1, 1, 0, 5e8, 1e-5, 32768, NULL, 0, 1, test_predict},
		{2, 0, 1 << 20, 2e9, 1e-5, 32768, NULL, 5e-4, 1, test_predict},
	};
	CHECK(a && a->rail_idle && !a->peer_init);
	CHECK(a->init("", &st) == MRAIL_OK);
	/* The fastest rail (2) is busy: keep the messages queued, although
	 * rails 0 and 1 are idle; offered the idle rails, decline both. */
	CHECK_EQ(a->eager_rail(st, NULL, v, 3, &q, &count), -1);
	CHECK_EQ(count, 3);
	CHECK_EQ(a->rail_idle(st, NULL, v, 3, 0, &q, &count), 0);
	CHECK_EQ(a->rail_idle(st, NULL, v, 3, 1, &q, &count), 0);
	/* Rail 2 idle again: it takes every message that fits. */
	v[2].idle = 1;
	v[2].backlog_bytes = 0;
	v[2].busy_until = 0;
	count = 0;
	CHECK_EQ(a->rail_idle(st, NULL, v, 3, 2, &q, &count), 1);
	CHECK_EQ(count, 3);
	count = 0;
	CHECK_EQ(a->eager_rail(st, NULL, v, 3, &q, &count), 2);
	CHECK_EQ(count, 3);
	CHECK_EQ(a->rail_idle(st, NULL, v, 3, 0, &q, &count), 0);
	/* Measured 4x slower than nominal, rail 2 is no longer the fastest. */
	v[2].time_scale = 4;
	CHECK_EQ(a->eager_rail(st, NULL, v, 3, &q, &count), 0);
	CHECK_EQ(a->rail_idle(st, NULL, v, 3, 0, &q, &count), 1);
	CHECK_EQ(a->rail_idle(st, NULL, v, 3, 2, &q, &count), 0);
	v[2].time_scale = 1;
	/* Two equal rails: the first one only, also while it is busy (no
	 * spreading onto the idle twin). */
	struct mrail_rail_view eq[2] = {
		{0, 1, 0, 1e9, 1e-5, 32768, NULL, 0, 1, test_predict},
		{1, 1, 0, 1e9, 1e-5, 32768, NULL, 0, 1, test_predict},
	};
	CHECK_EQ(a->eager_rail(st, NULL, eq, 2, &q, &count), 0);
	eq[0].idle = 0;
	eq[0].backlog_bytes = 65536;
	eq[0].busy_until = 7e-5;
	CHECK_EQ(a->eager_rail(st, NULL, eq, 2, &q, &count), -1);
	CHECK_EQ(a->rail_idle(st, NULL, eq, 2, 1, &q, &count), 0);
	/* Fastest *for the packet*: a low-latency slow rail wins a tiny
	 * packet, a high-bandwidth one a full packet. */
	struct mrail_rail_view lb[2] = {
		{0, 1, 0, 1e10, 5e-5, 32768, NULL, 0, 1, test_predict},
		{1, 1, 0, 1e8, 1e-6, 32768, NULL, 0, 1, test_predict},
	};
	const size_t tiny[1] = {64}, big[2] = {30000, 30000};
	struct mrail_send_queue qt = queue(tiny, 1, 65536);
	struct mrail_send_queue qb = queue(big, 2, 65536);
	CHECK_EQ(a->eager_rail(st, NULL, lb, 2, &qt, &count), 1);
	CHECK_EQ(count, 1);
	CHECK_EQ(a->eager_rail(st, NULL, lb, 2, &qb, &count), 0);
	CHECK_EQ(count, 2);
	/* Rendezvous: whole, on the rail that finishes first counting its
	 * queued work: rail 2 (fastest) unless it is busy long enough. */
	int n = a->rdv_split(st, NULL, v, 3, 1 << 20, c, MRAIL_MAX_CHUNKS);
	check_plan(c, n, 3, 1 << 20);
	CHECK(n == 1 && c[0].rail == 2);
	v[2].busy_until = 1e-3;
	n = a->rdv_split(st, NULL, v, 3, 1 << 20, c, MRAIL_MAX_CHUNKS);
	check_plan(c, n, 3, 1 << 20);
	CHECK(n == 1 && c[0].rail == 0);
	a->fini(st);
	CHECK(a->init("x=1", &st) == MRAIL_ERR_CONFIG);
	CHECK(a->init("chunk=4k", &st) == MRAIL_ERR_CONFIG);
}

/* eager_offload (offload, equation (1)): parts on distinct idle rails
 * covering the message when the handoff plus the slowest part beats the
 * best rail alone; 0 otherwise. */
static void check_parts(const struct mrail_chunk *c, int k,
			const struct mrail_rail_view *v, unsigned n,
			uint64_t len, unsigned max)
{
	uint64_t used = 0;
	CHECK(k >= 2 && (unsigned)k <= max);
	check_plan(c, k, n, len);
	for (int i = 0; i < k; i++) {
		CHECK(v[c[i].rail].idle);
		CHECK(!(used & (1ull << c[i].rail)));
		used |= 1ull << c[i].rail;
	}
}

static void test_eager_offload(void)
{
	struct mrail_rail_model *fast, *slow;
	struct mrail_chunk c[MRAIL_MAX_RAILS];
	void *st;
	int k;
	double gain;
	CHECK(mrail_model_from_nominal(125e6, 10e-6, &fast) == MRAIL_OK);
	CHECK(mrail_model_from_nominal(50e6, 10e-6, &slow) == MRAIL_OK);
	struct mrail_rail_view v[3] = {
		{0, 1, 0, 125e6, 10e-6, 32768, fast, 0, 1, test_predict},
		{1, 1, 0, 50e6, 10e-6, 32768, slow, 0, 1, test_predict},
		{2, 1, 0, 50e6, 10e-6, 32768, slow, 0, 1, test_predict},
	};
	/* 32 KiB: 272 us on the fast rail alone, ~197 us over both (plus
	 * 3 us of handoff). */
	const struct mrail_strategy_ops *split = mrail_strategy_find("split");
	CHECK(split && split->eager_offload);
	CHECK(split->init("", &st) == MRAIL_OK);
	k = split->eager_offload(st, NULL, v, 2, 32768, 3e-6, c, 2);
	check_parts(c, k, v, 2, 32768, 2);
	CHECK(c[0].rail == 0 && c[0].length > c[1].length); /* 125:50 */
	/* Three idle rails but two workers: at most two parts. */
	k = split->eager_offload(st, NULL, v, 3, 32768, 3e-6, c, 2);
	check_parts(c, k, v, 3, 32768, 2);
	k = split->eager_offload(st, NULL, v, 3, 32768, 3e-6, c, 3);
	check_parts(c, k, v, 3, 32768, 3);
	CHECK(k == 3);
	/* 64 B: the latency terms dominate, no gain; a handoff dearer than
	 * the whole transfer; one idle rail only: whole. */
	CHECK(split->eager_offload(st, NULL, v, 2, 64, 3e-6, c, 2) == 0);
	CHECK(split->eager_offload(st, NULL, v, 2, 32768, 1e-3, c, 2) == 0);
	v[1].idle = 0;
	CHECK(split->eager_offload(st, NULL, v, 2, 32768, 3e-6, c, 2) == 0);
	v[1].idle = 1;
	/* The busy fast rail: its busy_until counts. */
	v[0].busy_until = 1e-3;
	k = split->eager_offload(st, NULL, v, 3, 32768, 3e-6, c, 3);
	CHECK(k == 0 || c[0].rail != 0 || c[0].length < 16384);
	v[0].busy_until = 0;
	split->fini(st);

	/* Equation (1) by bandwidth (rails without a model, and the ops of
	 * iso, bw and greedy). */
	v[0].model = v[1].model = v[2].model = NULL;
	k = mrail_strategy_offload_plan(v, 2, 32768, 3e-6, 0, c, 2, &gain);
	check_parts(c, k, v, 2, 32768, 2);
	CHECK(gain > 50e-6);
	CHECK(mrail_strategy_offload_plan(v, 2, 64, 3e-6, 0, c, 2, &gain) == 0);
	CHECK(gain < 0);
	/* force (tests): parts even at a loss, as many as allowed. */
	k = mrail_strategy_offload_plan(v, 3, 64, 3e-6, 1, c, 3, NULL);
	check_parts(c, k, v, 3, 64, 3);
	CHECK(k == 3);
	CHECK(mrail_strategy_offload_plan(v, 3, 1, 0, 1, c, 3, NULL) == 0);
	static const char *const with[] = {"iso", "bw", "greedy"};
	for (unsigned i = 0; i < 3; i++) {
		const struct mrail_strategy_ops *s = mrail_strategy_find(with[i]);
		CHECK(s && s->eager_offload);
		k = s->eager_offload(NULL, NULL, v, 2, 32768, 3e-6, c, 2);
		check_parts(c, k, v, 2, 32768, 2);
	}
	/* One rail by design, or aggregation on the fastest: never parts. */
	static const char *const without[] = {"single", "pin", "aggreg"};
	for (unsigned i = 0; i < 3; i++)
		CHECK(mrail_strategy_find(without[i])->eager_offload == NULL);
	mrail_model_free(fast);
	mrail_model_free(slow);
}

int main(void)
{
	/* index, idle, backlog, bandwidth, latency, eager_max, model,
	 * busy_until, time_scale, predict */
	struct mrail_rail_view v[3] = {
		{0, 1, 0, 1e9, 1e-5, 32768, NULL, 0, 1, test_predict},
		{1, 0, 2 << 20, 2e9, 1e-5, 32768, NULL, 1.1e-3, 1, test_predict},
		{2, 1, 0, 5e8, 1e-5, 32768, NULL, 0, 1, test_predict},
	};
	const size_t rec1[1] = {100};
	struct mrail_send_queue q1 = queue(rec1, 1, 65536);
	unsigned count;
	struct mrail_chunk c[MRAIL_MAX_CHUNKS];
	void *st;
	const struct mrail_strategy_ops *iso = mrail_strategy_find("iso");
	const struct mrail_strategy_ops *single = mrail_strategy_find("single");
	CHECK(iso && single && !mrail_strategy_find("nope"));

	test_queue_helpers();
	test_packing(v, 3);
	test_greedy_packets(v, 3);
	test_aggreg();

	CHECK(iso->init("chunks=4,min_chunk=1", &st) == MRAIL_OK);
	uint64_t lens[] = {1, 2, 11, 4096, 1000003, 1ULL << 33};
	for (size_t i = 0; i < sizeof lens / sizeof *lens; i++) {
		int n = iso->rdv_split(st, NULL, v, 3, lens[i], c,
				       MRAIL_MAX_CHUNKS);
		check_plan(c, n, 3, lens[i]);
		if (lens[i] >= 12)
			CHECK(n == 12);
	}
	/* Fastest idle rail for eager: rail 0 (rail 1 is busy). */
	count = 0;
	CHECK(iso->eager_rail(st, NULL, v, 3, &q1, &count) == 0);
	CHECK_EQ(count, 1);
	iso->fini(st);
	CHECK(iso->init("chunks=0", &st) == MRAIL_ERR_CONFIG);
	CHECK(iso->init("what=1", &st) == MRAIL_ERR_CONFIG);
	CHECK(iso->init("chunks", &st) == MRAIL_ERR_CONFIG);
	CHECK(iso->init("", &st) == MRAIL_OK);
	int n = iso->rdv_split(st, NULL, v, 3, 5000, c, MRAIL_MAX_CHUNKS);
	check_plan(c, n, 3, 5000);
	CHECK(n == 1); /* below the default min_chunk: stays whole */
	iso->fini(st);

	CHECK(single->init("", &st) == MRAIL_OK);
	n = single->rdv_split(st, NULL, v, 3, 1 << 20, c, MRAIL_MAX_CHUNKS);
	check_plan(c, n, 3, 1 << 20);
	CHECK(n == 1 && c[0].rail == 0); /* rail 1 busy, rail 2 slower */
	/* Rail 1 free: twice as fast, it finishes first. */
	v[1].busy_until = 0;
	n = single->rdv_split(st, NULL, v, 3, 1 << 20, c, MRAIL_MAX_CHUNKS);
	CHECK(n == 1 && c[0].rail == 1);
	/* ... unless its measured time_scale says it is slower than that. */
	v[1].time_scale = 4;
	n = single->rdv_split(st, NULL, v, 3, 1 << 20, c, MRAIL_MAX_CHUNKS);
	CHECK(n == 1 && c[0].rail == 0);
	v[1].time_scale = 1;
	v[1].busy_until = 1.1e-3;
	/* Eager: the idle rail predicted to deliver first, packing 1. */
	count = 0;
	CHECK(single->eager_rail(st, NULL, v, 3, &q1, &count) == 0);
	CHECK_EQ(count, 1);
	single->fini(st);
	CHECK(single->init("x=1", &st) == MRAIL_ERR_CONFIG);
	const struct mrail_strategy_ops *pin = mrail_strategy_find("pin");
	CHECK(pin && pin->init("rail=2", &st) == MRAIL_OK);
	n = pin->rdv_split(st, NULL, v, 3, 1 << 20, c, MRAIL_MAX_CHUNKS);
	check_plan(c, n, 3, 1 << 20);
	CHECK(n == 1 && c[0].rail == 2);
	CHECK(pin->eager_rail(st, NULL, v, 3, &q1, &count) == 2);
	/* Only rails 0 and 1 up: the highest rail not above the pinned. */
	CHECK(pin->eager_rail(st, NULL, v, 2, &q1, &count) == -1); /* busy */
	pin->fini(st);
	CHECK(pin->init("rail=64", &st) == MRAIL_ERR_CONFIG);
	CHECK(pin->init("rails=1", &st) == MRAIL_ERR_CONFIG);
	/* split: equal finish over a fast and a slow rail, the slow one
	 * busy for a while: more bytes go to the fast, idle rail. */
	const struct mrail_strategy_ops *split = mrail_strategy_find("split");
	struct mrail_rail_model *fast, *slow;
	CHECK(split && split->init("min_chunk=4096", &st) == MRAIL_OK);
	CHECK(mrail_model_from_nominal(125e6, 10e-6, &fast) == MRAIL_OK);
	CHECK(mrail_model_from_nominal(50e6, 10e-6, &slow) == MRAIL_OK);
	struct mrail_rail_view sv[2] = {
		{0, 1, 0, 125e6, 10e-6, 32768, fast, 0, 1, test_predict},
		{1, 1, 0, 50e6, 10e-6, 32768, slow, 0, 1, test_predict},
	};
	n = split->rdv_split(st, NULL, sv, 2, 64 << 20, c, MRAIL_MAX_CHUNKS);
	check_plan(c, n, 2, 64 << 20);
	CHECK(n == 2);
	/* 125:50 of the bytes, within a percent */
	CHECK(c[0].length > 0.70 * (64 << 20) && c[0].length < 0.73 * (64 << 20));
	/* The fast rail measured at half its model's speed: 62.5:50. */
	sv[0].time_scale = 2;
	n = split->rdv_split(st, NULL, sv, 2, 64 << 20, c, MRAIL_MAX_CHUNKS);
	check_plan(c, n, 2, 64 << 20);
	CHECK(c[0].length > 0.54 * (64 << 20) && c[0].length < 0.57 * (64 << 20));
	sv[0].time_scale = 1;
	sv[1].busy_until = 0.1; /* 5 MB of work queued on the slow rail */
	n = split->rdv_split(st, NULL, sv, 2, 64 << 20, c, MRAIL_MAX_CHUNKS);
	check_plan(c, n, 2, 64 << 20);
	CHECK(c[0].length > 0.75 * (64 << 20));
	/* Eager: the idle rail that delivers first. */
	CHECK(split->eager_rail(st, NULL, sv, 2, &q1, &count) == 0);
	split->fini(st);
	/* busy=0: plan as if every rail were free (back to 125:50). */
	CHECK(split->init("min_chunk=4096,busy=0", &st) == MRAIL_OK);
	n = split->rdv_split(st, NULL, sv, 2, 64 << 20, c, MRAIL_MAX_CHUNKS);
	check_plan(c, n, 2, 64 << 20);
	CHECK(c[0].length > 0.70 * (64 << 20) && c[0].length < 0.73 * (64 << 20));
	split->fini(st);
	CHECK(split->init("min_chunk", &st) == MRAIL_ERR_CONFIG);
	CHECK(split->init("busy=2", &st) == MRAIL_ERR_CONFIG);
	mrail_model_free(fast);
	mrail_model_free(slow);
	test_eager_offload();
	puts("test_strategy: ok");
	return 0;
}

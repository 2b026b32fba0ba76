/*
 * demo_rails: per-rail traffic table of mrail-demo.
 */
#include "demo_rails.h"
#include "bench_util.h"

#include <stdio.h>
#include <string.h>

void demo_rails_snapshot(mrail_engine_t *e, mrail_peer_t peer,
			 struct demo_rails *snap)
{
	int n = mrail_rail_count(e, peer);
	if (n < 0)
		bench_die("mrail_rail_count(peer %u) failed: %s (%d)", peer,
			  mrail_strerror(n), n);
	snap->n = n > DEMO_MAX_RAILS ? DEMO_MAX_RAILS : n;
	for (int i = 0; i < snap->n; i++) {
		MRAIL_CHECK(mrail_rail_stats(e, peer, i, &snap->s[i]));
		MRAIL_CHECK(mrail_rail_info(e, peer, i, &snap->info[i]));
	}
}

static uint64_t delta(const struct demo_rails *a, const struct demo_rails *b,
		      int i, int rx)
{
	uint64_t before = i < a->n ? (rx ? a->s[i].rx_bytes : a->s[i].tx_bytes) : 0;
	return (rx ? b->s[i].rx_bytes : b->s[i].tx_bytes) - before;
}

static uint64_t msgs(const struct demo_rails *a, const struct demo_rails *b,
		     int i)
{
	uint64_t before = i < a->n ? a->s[i].tx_msgs + a->s[i].rx_msgs : 0;
	return b->s[i].tx_msgs + b->s[i].rx_msgs - before;
}

static void endpoints(const struct demo_rails *b, int i, char *ep, size_t len)
{
	snprintf(ep, len, "%s %s -> %s %s", b->info[i].local_if, b->s[i].local,
		 b->info[i].remote_if, b->s[i].remote);
}

void demo_rails_print(const struct demo_rails *a, const struct demo_rails *b,
		      double seconds)
{
	uint64_t tx_all = 0, rx_all = 0;
	double rate = seconds > 0 ? 1.0 / (1e6 * seconds) : 0;
	int w = 16;
	char ep[160], tx[32], rx[32];

	for (int i = 0; i < b->n; i++) {
		endpoints(b, i, ep, sizeof ep);
		int l = (int)strlen(ep);
		if (l > w)
			w = l;
		tx_all += delta(a, b, i, 0);
		rx_all += delta(a, b, i, 1);
	}
	printf("\n%-5s %-7s %-*s %12s %12s %7s %7s %10s %10s\n", "rail",
	       "driver", w, "local -> remote", "sent", "received", "msgs",
	       "share", "out MB/s", "in MB/s");
	for (int i = 0; i < b->n; i++) {
		uint64_t t = delta(a, b, i, 0), r = delta(a, b, i, 1);
		double share = tx_all + rx_all ? 100.0 * (double)(t + r) /
						 (double)(tx_all + rx_all) : 0;
		endpoints(b, i, ep, sizeof ep);
		bench_fmt_bytes(tx, sizeof tx, t);
		bench_fmt_bytes(rx, sizeof rx, r);
		printf("%-5d %-7s %-*s %12s %12s %7llu %6.1f%% %10.1f %10.1f%s\n",
		       i, b->s[i].driver, w, ep, tx, rx,
		       (unsigned long long)msgs(a, b, i), share, (double)t * rate,
		       (double)r * rate, b->s[i].up ? "" : "  (DOWN)");
	}
	bench_fmt_bytes(tx, sizeof tx, tx_all);
	bench_fmt_bytes(rx, sizeof rx, rx_all);
	printf("%-5s %-7s %-*s %12s %12s %7s %6.1f%% %10.1f %10.1f\n", "total",
	       "", w, "", tx, rx, "", 100.0, (double)tx_all * rate,
	       (double)rx_all * rate);
}

/*
 * mrail-sample --plot: time and bandwidth against size, both protocols,
 * drawn by gnuplot (Debian's gnuplot-nox) into a PNG.
 */
#include "sample_tool.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int sample_plot(const struct mrail_profile *p, const char *png)
{
	char data[] = "/tmp/mrail-plot-XXXXXX";
	int fd = mkstemp(data);
	if (fd < 0) {
		perror("mrail-sample: temporary file");
		return 1;
	}
	FILE *f = fdopen(fd, "w");
	for (unsigned i = 0; f && i < p->nsamples; i++) {
		const struct mrail_profile_sample *s = &p->samples[i];
		fprintf(f, "%llu", (unsigned long long)s->size);
		fprintf(f, mrail_profile_has(s->eager) ? " %.9g" : " NaN", s->eager);
		fprintf(f, mrail_profile_has(s->rdv) ? " %.9g\n" : " NaN\n", s->rdv);
	}
	if (f)
		fclose(f);
	FILE *g = popen("gnuplot", "w");
	if (!g) {
		fprintf(stderr, "mrail-sample: cannot run gnuplot (apt-get "
			"install gnuplot-nox)\n");
		unlink(data);
		return 1;
	}
	fprintf(g,
		"set terminal pngcairo noenhanced size 1000,420\n"
		"set output '%s'\n"
		"set multiplot layout 1,2 title '%s %s -> %s'\n"
		"set logscale xy\nset xlabel 'size (bytes)'\nset grid\n"
		"set format x '%%.0s%%cB'\n"
		"set ylabel 'one-way time (us)'\n"
		"plot '%s' u 1:($2*1e6) w lp t 'eager', '' u 1:($3*1e6) w lp t 'rendezvous'\n"
		"unset logscale y\nset ylabel 'bandwidth (MB/s)'\n"
		"plot '%s' u 1:($1/$2/1e6) w lp t 'eager', '' u 1:($1/$3/1e6) w lp t 'rendezvous'\n"
		"unset multiplot\n",
		png, p->id.driver, p->id.local, p->id.peer, data, data);
	int rc = pclose(g);
	unlink(data);
	if (rc) {
		fprintf(stderr, "mrail-sample: gnuplot failed (is it installed? "
			"apt-get install gnuplot-nox)\n");
		return 1;
	}
	printf("plot written to %s\n", png);
	return 0;
}

/* The C tag codec against the vectors the controller's python port also
 * checks (tests/sdn/tag_vectors.txt): both ends of the network agree. */
#include <stdio.h>
#include <string.h>

#include "sdn_tag.h"
#include "../check.h"

int main(int argc, char **argv)
{
	char line[256];
	int n = 0;
	FILE *f;

	CHECK(argc == 2);
	f = fopen(argv[1], "r");
	CHECK(f != NULL);
	while (fgets(line, sizeof(line), f)) {
		struct mrail_sdn_ctx c, d;
		unsigned m[6];
		uint8_t want[6], got[6];

		if (line[0] == '#' || line[0] == '\n')
			continue;
		CHECK_EQ(sscanf(line, "%u %u %u %u %x:%x:%x:%x:%x:%x", &c.prim,
				&c.comm, &c.src, &c.dst, &m[0], &m[1], &m[2],
				&m[3], &m[4], &m[5]), 10);
		for (int i = 0; i < 6; i++)
			want[i] = (uint8_t)m[i];
		CHECK_EQ(mrail_sdn_tag_encode(&c, got), 0);
		if (memcmp(got, want, 6) != 0) {
			fprintf(stderr, "encode mismatch: %s", line);
			return 1;
		}
		CHECK_EQ(mrail_sdn_tag_decode(want, &d), 0);
		CHECK(d.prim == c.prim && d.comm == c.comm && d.src == c.src &&
		      d.dst == c.dst);
		n++;
	}
	fclose(f);
	CHECK(n >= 10);
	printf("test_tag_vectors: %d vectors ok\n", n);
	return 0;
}

/*
 * mrail-run's host lists (--hosts), hostfiles (--hostfile) and --wrap
 * templates (launcher/hosts.c), then the placement and command lines
 * built from them. Input: one byte choosing the parser and the rank
 * count, then its text.
 */
#include "fuzz.h"
#include "launcher/hosts.h"
#include "launcher/options.h"

#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static void check_placement(const struct host_list *h, unsigned np)
{
	struct placement *pl = calloc(np, sizeof *pl);
	if (!pl)
		return;
	FUZZ_CHECK(place_ranks(h, np, pl) == 0);
	for (unsigned r = 0; r < np; r++) {
		FUZZ_CHECK(pl[r].host != NULL);
		FUZZ_CHECK(pl[r].local_rank < pl[r].local_size);
		FUZZ_CHECK(pl[r].local_size <= np);
	}
	free(pl);
}

static void check_list(const struct host_list *h, unsigned np)
{
	FUZZ_CHECK(h->nslots >= 1 && h->nslots <= MRAIL_RUN_NP_MAX);
	FUZZ_CHECK(h->nnames >= 1);
	for (size_t i = 0; i < h->nslots; i++)
		FUZZ_CHECK(h->slot[i] < h->nnames);
	for (size_t i = 0; i < h->nnames; i++)
		FUZZ_CHECK(strlen(h->names[i]) >= 1 &&
			   strlen(h->names[i]) <= HOST_NAME_LEN_MAX &&
			   h->names[i][0] != '-');
	check_placement(h, np);
}

static void hostfile(const uint8_t *data, size_t size, unsigned np)
{
	char path[64];
	struct host_list h;
	int fd = memfd_create("hostfile", MFD_CLOEXEC);
	if (fd < 0)
		return;
	if (write(fd, data, size) == (ssize_t)size) {
		snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
		if (host_list_read_file(path, &h) == 0) {
			check_list(&h, np);
			host_list_free(&h);
		} else {
			FUZZ_CHECK(h.names == NULL && h.slot == NULL);
		}
	}
	close(fd);
}

static void wrap(const char *s)
{
	struct wrap_template w;
	char *env[] = {"MRAIL_RANK=1", "A=it's \"q\" $x `y`", "B="};
	char *prog[] = {"./app", "arg with space", "", "-x", NULL};
	if (wrap_parse(s, &w) < 0)
		return;
	for (int quote = 0; quote < 2; quote++) {
		char **argv = wrap_argv(&w, "node-1", 7, env, 3, prog, quote);
		FUZZ_CHECK(argv != NULL);
		size_t n = 0;
		while (argv[n])
			fuzz_touch(argv[n], strlen(argv[n])), n++;
		FUZZ_CHECK(n >= 4);
		argv_free(argv);
	}
	wrap_free(&w);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	unsigned mode = data[0] % 3;
	unsigned np = 1 + (data[0] / 3) * 12; /* 1..1021 */
	char *s = fuzz_strndup(data + 1, size - 1);
	struct host_list h;

	switch (mode) {
	case 0:
		if (host_list_parse(s, &h) == 0) {
			check_list(&h, np);
			host_list_free(&h);
		}
		break;
	case 1:
		hostfile(data + 1, size - 1, np);
		break;
	default:
		wrap(s);
		break;
	}
	free(s);
	return 0;
}

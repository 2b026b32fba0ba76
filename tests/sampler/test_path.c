/* Profile file names and the profile directory's resolution. */
#include "sampler_test.h"
#include "mrail.h"

#include <errno.h>
#include <sys/stat.h>

static void id_set(struct mrail_rail_identity *id, const char *drv,
		   const char *local, uint64_t mbps, const char *peer)
{
	memset(id, 0, sizeof *id);
	snprintf(id->driver, sizeof id->driver, "%s", drv);
	snprintf(id->local, sizeof id->local, "%s", local);
	id->link_mbps = mbps;
	snprintf(id->peer, sizeof id->peer, "%s", peer);
}

static void expect_name(const char *drv, const char *local, uint64_t mbps,
			const char *peer, const char *want)
{
	struct mrail_rail_identity id;
	char buf[MRAIL_PROFILE_PATH_MAX];
	id_set(&id, drv, local, mbps, peer);
	CHECK_EQ(mrail_profile_path("/d", &id, buf, sizeof buf), MRAIL_OK);
	if (strcmp(buf, want)) {
		fprintf(stderr, "got %s, want %s\n", buf, want);
		exit(1);
	}
}

static void test_names(void)
{
	struct mrail_rail_identity id;
	char a[MRAIL_PROFILE_PATH_MAX], b[MRAIL_PROFILE_PATH_MAX];
	expect_name("tcp", "eth0", 10000, "node2-eth1",
		    "/d/tcp_eth0_10000Mbps_node2-eth1.profile");
	/* Separators, slashes, spaces, '%' and '_' are escaped: a name is
	 * one path component and the mapping is injective. */
	expect_name("tcp", "eth0", 0, "node2/eth1",
		    "/d/tcp_eth0_0Mbps_node2%2Feth1.profile");
	expect_name("tcp", "e_1", 1, "10.0.0.2",
		    "/d/tcp_e%5F1_1Mbps_10.0.0.2.profile");
	expect_name("verbs", "mlx5_0:1", 100000, "a b%",
		    "/d/verbs_mlx5%5F0%3A1_100000Mbps_a%20b%25.profile");
	expect_name(".hidden", "..", 1, "..",
		    "/d/%2Ehidden_.._1Mbps_...profile");
	expect_name("tcp", "", 1, "",
		    "/d/tcp__1Mbps_.profile");
	/* Trailing slash on the directory is not doubled. */
	id_set(&id, "tcp", "eth0", 1, "p");
	CHECK_EQ(mrail_profile_path("/d/", &id, a, sizeof a), MRAIL_OK);
	CHECK(!strcmp(a, "/d/tcp_eth0_1Mbps_p.profile"));
	/* Fields that would collide if merely joined do not. */
	id_set(&id, "tcp", "a_b", 1, "c");
	CHECK_EQ(mrail_profile_path("/d", &id, a, sizeof a), MRAIL_OK);
	id_set(&id, "tcp", "a", 1, "b_c");
	CHECK_EQ(mrail_profile_path("/d", &id, b, sizeof b), MRAIL_OK);
	CHECK(strcmp(a, b));
	/* Long identities: cut to fit a directory entry, distinct by hash. */
	char peer[128];
	memset(peer, '/', sizeof peer - 1);
	peer[sizeof peer - 1] = '\0';
	id_set(&id, "tcp", "eth0", 1, peer);
	CHECK_EQ(mrail_profile_path("/d", &id, a, sizeof a), MRAIL_OK);
	peer[sizeof peer - 2] = 'x';
	id_set(&id, "tcp", "eth0", 1, peer);
	CHECK_EQ(mrail_profile_path("/d", &id, b, sizeof b), MRAIL_OK);
	CHECK(strcmp(a, b));
	CHECK(strlen(strrchr(a, '/') + 1) <= 255);
	CHECK(strstr(a, "~") && strstr(a, ".profile"));
	CHECK(!strchr(strrchr(a, '/') + 1, '/'));
	/* Errors: small buffer, no directory, unterminated field. */
	id_set(&id, "tcp", "eth0", 1, "p");
	CHECK(mrail_profile_path("/d", &id, a, 10) == MRAIL_ERR_INVALID);
	CHECK(mrail_profile_path("", &id, a, sizeof a) == MRAIL_ERR_INVALID);
	memset(id.driver, 'x', sizeof id.driver);
	CHECK(mrail_profile_path("/d", &id, a, sizeof a) == MRAIL_ERR_INVALID);
}

static void expect_dir(const char *want)
{
	char buf[MRAIL_PROFILE_PATH_MAX];
	CHECK_EQ(mrail_profile_dir(buf, sizeof buf), MRAIL_OK);
	if (strcmp(buf, want)) {
		fprintf(stderr, "got %s, want %s\n", buf, want);
		exit(1);
	}
}

static void test_dir(void)
{
	char buf[8];
	setenv("MRAIL_PROFILE_DIR", "/p/dir", 1);
	setenv("XDG_CACHE_HOME", "/xdg", 1);
	setenv("HOME", "/home/u", 1);
	expect_dir("/p/dir");
	setenv("MRAIL_PROFILE_DIR", "", 1); /* empty: as if unset */
	expect_dir("/xdg/mrail/profiles");
	unsetenv("MRAIL_PROFILE_DIR");
	expect_dir("/xdg/mrail/profiles");
	setenv("XDG_CACHE_HOME", "relative", 1); /* ignored (XDG spec) */
	expect_dir("/home/u/.cache/mrail/profiles");
	unsetenv("XDG_CACHE_HOME");
	expect_dir("/home/u/.cache/mrail/profiles");
	unsetenv("HOME"); /* the password database's home */
	char got[MRAIL_PROFILE_PATH_MAX];
	int rc = mrail_profile_dir(got, sizeof got);
	CHECK(rc == MRAIL_OK || rc == MRAIL_ERR_NOT_FOUND);
	if (rc == MRAIL_OK)
		CHECK(strstr(got, "/.cache/mrail/profiles"));
	setenv("MRAIL_PROFILE_DIR", "/a/long/directory", 1);
	CHECK(mrail_profile_dir(buf, sizeof buf) == MRAIL_ERR_INVALID);
}

static void test_mkdir(void)
{
	char dir[256], path[512];
	struct stat st;
	test_tmpdir(dir, sizeof dir);
	snprintf(path, sizeof path, "%s/a/b/c", dir);
	CHECK_EQ(mrail_profile_mkdir(path), MRAIL_OK);
	CHECK(stat(path, &st) == 0 && S_ISDIR(st.st_mode));
	CHECK_EQ(mrail_profile_mkdir(path), MRAIL_OK); /* exists: fine */
	snprintf(path, sizeof path, "%s/a/b/c/", dir);
	CHECK_EQ(mrail_profile_mkdir(path), MRAIL_OK);
	snprintf(path, sizeof path, "%s/file", dir);
	FILE *f = fopen(path, "w");
	CHECK(f && fclose(f) == 0);
	CHECK(mrail_profile_mkdir(path) == MRAIL_ERR_IO);
	CHECK(errno == ENOTDIR);
	snprintf(path, sizeof path, "%s/file/sub", dir);
	CHECK(mrail_profile_mkdir(path) == MRAIL_ERR_IO);
	test_rmdir(dir);
}

int main(void)
{
	test_names();
	test_dir();
	test_mkdir();
	printf("path: ok\n");
	return 0;
}

/*
 * mrail-sdn-tagger load|unload|status [--dir DIR] [--group GROUP] IFACE...
 *
 * The bpf tagger's loader, run as root once per node (docs/sdn.md "bpf
 * backend"): loads the tc programs (tagger.bpf.c), pins them and their maps
 * under DIR (/sys/fs/bpf/mrail), opens the tag map to GROUP so the job's
 * processes can write their sockets' tags, and attaches the programs to
 * each interface's clsact egress and ingress hooks. load on a node already
 * loaded reuses the pinned objects (more interfaces can be added);
 * unload detaches from the interfaces named and removes the pins once no
 * interface is left.
 */
#include "mpi-binding/sdn/sdn_bpf_abi.h"
#include "tagger.skel.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <grp.h>
#include <linux/magic.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

static const char *dir = MRAIL_SDN_BPF_DIR;
static const char *group;

static int fail(const char *fmt, ...)
{
	va_list ap;
	fputs("mrail-sdn-tagger: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 1;
}

static void pin_path(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", dir, name);
}

/* libbpf's warnings, less the kernel's note that the clsact qdisc is
 * there already (a second load, or another tc user's). */
static int print_libbpf(enum libbpf_print_level level, const char *fmt,
			va_list ap)
{
	char line[1024];
	if (level == LIBBPF_DEBUG)
		return 0;
	vsnprintf(line, sizeof line, fmt, ap);
	if (strstr(line, "Exclusivity flag on"))
		return 0;
	return fputs(line, stderr);
}

static int pinned_fd(const char *name)
{
	char p[512];
	pin_path(p, sizeof p, name);
	return bpf_obj_get(p);
}

static int is_bpffs(const char *path)
{
	struct statfs st;
	return statfs(path, &st) == 0 && st.f_type == BPF_FS_MAGIC;
}

/* The pin directory's parent must be a bpf file system; the usual
 * /sys/fs/bpf gets mounted when nothing is. */
static int prepare_dir(void)
{
	char parent[512];
	snprintf(parent, sizeof parent, "%s", dir);
	char *slash = strrchr(parent, '/');
	if (!slash || slash == parent)
		return fail("--dir %s: want a directory inside a bpf file "
			    "system, e.g. /sys/fs/bpf/mrail", dir);
	*slash = 0;
	if (!is_bpffs(parent)) {
		if (strcmp(parent, "/sys/fs/bpf"))
			return fail("%s is not a bpf file system (mount -t bpf "
				    "bpf %s)", parent, parent);
		if (mount("bpf", parent, "bpf", 0, "mode=0755"))
			return fail("mounting the bpf file system on %s: %s",
				    parent, strerror(errno));
	}
	if (mkdir(dir, 0750) && errno != EEXIST)
		return fail("mkdir %s: %s", dir, strerror(errno));
	return 0;
}

static int set_mode(const char *name, mode_t mode, gid_t gid)
{
	char p[512];
	if (name)
		pin_path(p, sizeof p, name);
	else
		snprintf(p, sizeof p, "%s", dir);
	if (chown(p, 0, gid) || chmod(p, mode))
		return fail("permissions of %s: %s", p, strerror(errno));
	return 0;
}

/* Who may tag: the directory and the tag map to GROUP (group: enter the
 * directory, open the map for writing; stats readable); programs and the
 * interface table stay root's. */
static int permissions(void)
{
	gid_t gid = 0;
	if (group) {
		struct group *g = getgrnam(group);
		char *end;
		unsigned long v = strtoul(group, &end, 10);
		if (g)
			gid = g->gr_gid;
		else if (*group && !*end)
			gid = (gid_t)v;
		else
			return fail("--group %s: no such group", group);
	}
	mode_t dmode = group ? 0750 : 0755, tmode = group ? 0660 : 0666;
	/* Without --group anyone may tag (the default for one-user nodes). */
	return set_mode(NULL, dmode, gid) ||
	       set_mode(MRAIL_SDN_BPF_TAGS, tmode, gid) ||
	       set_mode(MRAIL_SDN_BPF_STATS, 0644, gid) ||
	       set_mode(MRAIL_SDN_BPF_IFMAC, 0600, 0) ||
	       set_mode(MRAIL_SDN_BPF_EGRESS, 0600, 0) ||
	       set_mode(MRAIL_SDN_BPF_INGRESS, 0600, 0);
}

static int load_and_pin(void)
{
	struct mrail_sdn_tagger *skel = mrail_sdn_tagger__open_and_load();
	if (!skel)
		return fail("loading the programs: %s (kernel without BPF "
			    "socket storage or tc BPF?)", strerror(errno));
	struct { struct bpf_map *m; const char *n; } maps[] = {
		{skel->maps.tags, MRAIL_SDN_BPF_TAGS},
		{skel->maps.ifmac, MRAIL_SDN_BPF_IFMAC},
		{skel->maps.stats, MRAIL_SDN_BPF_STATS}};
	struct { struct bpf_program *p; const char *n; } progs[] = {
		{skel->progs.mrail_sdn_egress, MRAIL_SDN_BPF_EGRESS},
		{skel->progs.mrail_sdn_ingress, MRAIL_SDN_BPF_INGRESS}};
	char p[512];
	int rc = 0;
	for (size_t i = 0; i < 3 && !rc; i++) {
		pin_path(p, sizeof p, maps[i].n);
		if (bpf_map__pin(maps[i].m, p))
			rc = fail("pinning %s: %s", p, strerror(errno));
	}
	for (size_t i = 0; i < 2 && !rc; i++) {
		pin_path(p, sizeof p, progs[i].n);
		if (bpf_program__pin(progs[i].p, p))
			rc = fail("pinning %s: %s", p, strerror(errno));
	}
	mrail_sdn_tagger__destroy(skel);
	return rc;
}

static int if_mac(const char *ifname, struct mrail_sdn_bpf_mac *m)
{
	struct ifreq r;
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -1;
	memset(&r, 0, sizeof r);
	snprintf(r.ifr_name, sizeof r.ifr_name, "%s", ifname);
	int rc = ioctl(s, SIOCGIFHWADDR, &r);
	close(s);
	if (rc)
		return -1;
	memset(m, 0, sizeof *m);
	memcpy(m->mac, r.ifr_hwaddr.sa_data, 6);
	return 0;
}

static int attach_one(const char *ifname, int egress_fd, int ingress_fd,
		      int ifmac_fd)
{
	unsigned ifindex = if_nametoindex(ifname);
	struct mrail_sdn_bpf_mac m;
	if (!ifindex)
		return fail("no interface %s", ifname);
	if (if_mac(ifname, &m))
		return fail("%s: no Ethernet address (%s)", ifname,
			    strerror(errno));
	__u32 key = ifindex;
	if (bpf_map_update_elem(ifmac_fd, &key, &m, BPF_ANY))
		return fail("%s: recording its address: %s", ifname,
			    strerror(errno));
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = (int)ifindex,
			    .attach_point = BPF_TC_INGRESS | BPF_TC_EGRESS);
	int rc = bpf_tc_hook_create(&hook);
	if (rc && rc != -EEXIST)
		return fail("%s: clsact qdisc: %s", ifname, strerror(-rc));
	const struct { int fd; enum bpf_tc_attach_point at; } dirs[] = {
		{egress_fd, BPF_TC_EGRESS}, {ingress_fd, BPF_TC_INGRESS}};
	for (int i = 0; i < 2; i++) {
		hook.attach_point = dirs[i].at;
		DECLARE_LIBBPF_OPTS(bpf_tc_opts, o,
				    .handle = MRAIL_SDN_BPF_TC_HANDLE,
				    .priority = MRAIL_SDN_BPF_TC_PRIO,
				    .prog_fd = dirs[i].fd,
				    .flags = BPF_TC_F_REPLACE);
		rc = bpf_tc_attach(&hook, &o);
		if (rc)
			return fail("%s: attaching the %s program: %s", ifname,
				    i ? "ingress" : "egress", strerror(-rc));
	}
	printf("%s: tagger attached (egress, ingress; real MAC "
	       "%02x:%02x:%02x:%02x:%02x:%02x)\n", ifname, m.mac[0], m.mac[1],
	       m.mac[2], m.mac[3], m.mac[4], m.mac[5]);
	return 0;
}

static int cmd_load(int n, char **ifs)
{
	if (geteuid() != 0)
		return fail("load needs root (it attaches tc programs)");
	if (prepare_dir())
		return 1;
	int eg = pinned_fd(MRAIL_SDN_BPF_EGRESS);
	if (eg < 0) {
		if (load_and_pin())
			return 1;
		eg = pinned_fd(MRAIL_SDN_BPF_EGRESS);
	}
	int in = pinned_fd(MRAIL_SDN_BPF_INGRESS);
	int im = pinned_fd(MRAIL_SDN_BPF_IFMAC);
	if (eg < 0 || in < 0 || im < 0)
		return fail("%s holds a partial tagger (unload, then load "
			    "again): %s", dir, strerror(errno));
	int rc = permissions();
	for (int i = 0; i < n && !rc; i++)
		rc = attach_one(ifs[i], eg, in, im);
	close(eg);
	close(in);
	close(im);
	return rc;
}

static int attached(unsigned ifindex, enum bpf_tc_attach_point at)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = (int)ifindex,
			    .attach_point = at);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, o, .handle = MRAIL_SDN_BPF_TC_HANDLE,
			    .priority = MRAIL_SDN_BPF_TC_PRIO);
	return bpf_tc_query(&hook, &o) == 0;
}

static int unpin_all(void)
{
	const char *names[] = {MRAIL_SDN_BPF_TAGS, MRAIL_SDN_BPF_IFMAC,
			       MRAIL_SDN_BPF_STATS, MRAIL_SDN_BPF_EGRESS,
			       MRAIL_SDN_BPF_INGRESS};
	char p[512];
	for (size_t i = 0; i < 5; i++) {
		pin_path(p, sizeof p, names[i]);
		if (unlink(p) && errno != ENOENT)
			return fail("removing %s: %s", p, strerror(errno));
	}
	if (rmdir(dir) && errno != ENOENT)
		return fail("removing %s: %s", dir, strerror(errno));
	printf("%s: removed (no interface left)\n", dir);
	return 0;
}

static int cmd_unload(int n, char **ifs)
{
	if (geteuid() != 0)
		return fail("unload needs root");
	int im = pinned_fd(MRAIL_SDN_BPF_IFMAC);
	if (im < 0)
		return fail("no tagger loaded in %s", dir);
	int rc = 0;
	for (int i = 0; i < n; i++) {
		unsigned ifindex = if_nametoindex(ifs[i]);
		if (!ifindex) {
			rc = fail("no interface %s", ifs[i]);
			continue;
		}
		for (int k = 0; k < 2; k++) {
			enum bpf_tc_attach_point at =
				k ? BPF_TC_INGRESS : BPF_TC_EGRESS;
			if (!attached(ifindex, at))
				continue;
			DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook,
					    .ifindex = (int)ifindex,
					    .attach_point = at);
			DECLARE_LIBBPF_OPTS(bpf_tc_opts, o,
					    .handle = MRAIL_SDN_BPF_TC_HANDLE,
					    .priority = MRAIL_SDN_BPF_TC_PRIO);
			int e = bpf_tc_detach(&hook, &o);
			if (e)
				rc = fail("%s: detaching: %s", ifs[i],
					  strerror(-e));
		}
		__u32 key = ifindex;
		bpf_map_delete_elem(im, &key);
		printf("%s: tagger detached\n", ifs[i]);
	}
	/* The pins go with the last interface (one DIR per network
	 * namespace: the interface table is keyed by ifindex). */
	__u32 next;
	int left = bpf_map_get_next_key(im, NULL, &next) == 0;
	close(im);
	return rc ? rc : left ? 0 : unpin_all();
}

static int cmd_status(int n, char **ifs)
{
	int st = pinned_fd(MRAIL_SDN_BPF_STATS);
	if (st < 0) {
		printf("not loaded (%s/%s: %s)\n", dir, MRAIL_SDN_BPF_STATS,
		       strerror(errno));
		return 3;
	}
	int ncpu = libbpf_num_possible_cpus();
	if (ncpu <= 0) {
		close(st);
		return fail("cannot count the CPUs");
	}
	static const char *names[MRAIL_SDN_ST_COUNT] = {
		"tagged_packets", "tagged_bytes", "plain_packets",
		"plain_bytes", "restored_packets", "restored_bytes"};
	__u64 *v = calloc((size_t)ncpu, sizeof *v);
	if (!v)
		return fail("out of memory");
	printf("loaded: %s (ABI %d)\n", dir, MRAIL_SDN_BPF_ABI_VERSION);
	for (__u32 i = 0; i < MRAIL_SDN_ST_COUNT; i++) {
		__u64 sum = 0;
		if (bpf_map_lookup_elem(st, &i, v) == 0)
			for (int c = 0; c < ncpu; c++)
				sum += v[c];
		printf("%s %llu\n", names[i], (unsigned long long)sum);
	}
	free(v);
	close(st);
	int rc = 0;
	for (int i = 0; i < n; i++) {
		unsigned ifindex = if_nametoindex(ifs[i]);
		if (!ifindex) {
			rc = fail("no interface %s", ifs[i]);
			continue;
		}
		int e = attached(ifindex, BPF_TC_EGRESS);
		int in = attached(ifindex, BPF_TC_INGRESS);
		printf("%s: egress %s, ingress %s\n", ifs[i],
		       e ? "attached" : "not attached",
		       in ? "attached" : "not attached");
		if (!e || !in)
			rc = 4;
	}
	return rc;
}

static int usage(void)
{
	fprintf(stderr,
		"usage: mrail-sdn-tagger load|unload|status [--dir DIR] "
		"[--group GROUP] IFACE...\n"
		"  load    (root) load the tc tagger, pin it under DIR (default "
		MRAIL_SDN_BPF_DIR ")\n"
		"          with the tag map writable by GROUP, attach it to "
		"each IFACE\n"
		"  unload  (root) detach from each IFACE; unpin when none is "
		"left\n"
		"  status  counters; per IFACE whether it is attached (exit 4 "
		"if not)\n");
	return 2;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return usage();
	const char *cmd = argv[1];
	char **ifs = calloc((size_t)argc, sizeof *ifs);
	int n = 0;
	const char *env = getenv("MRAIL_SDN_BPF_DIR");
	if (env && *env)
		dir = env;
	if (!ifs)
		return fail("out of memory");
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--dir") && i + 1 < argc)
			dir = argv[++i];
		else if (!strcmp(argv[i], "--group") && i + 1 < argc)
			group = argv[++i];
		else if (argv[i][0] == '-')
			return usage();
		else
			ifs[n++] = argv[i];
	}
	libbpf_set_strict_mode(LIBBPF_STRICT_ALL);
	libbpf_set_print(print_libbpf);
	int rc;
	if (!strcmp(cmd, "load"))
		rc = n ? cmd_load(n, ifs) : usage();
	else if (!strcmp(cmd, "unload"))
		rc = n ? cmd_unload(n, ifs) : usage();
	else if (!strcmp(cmd, "status"))
		rc = cmd_status(n, ifs);
	else
		rc = usage();
	free(ifs);
	return rc;
}

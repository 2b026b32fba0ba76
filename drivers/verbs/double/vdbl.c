/*
 * The verbs test double: devices, contexts, PDs, MRs, CQs, completion
 * channels and the per-process shared segment (vdbl_internal.h explains
 * the model; QPs and work requests are in vdbl_qp.c).
 */
#include "drivers/verbs/double/vdbl_internal.h"
#include "util/log.h"
#include "util/params.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

struct vdbl_global vdbl_g = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* ---- configuration ----------------------------------------------------- */

static int parse_conf(const char *s, struct vdbl_conf *c)
{
	char key[32], val[32];
	const char *pos = s;
	int rc;

	*c = (struct vdbl_conf){.devices = 2, .ports = 1, .speed = 32,
				.width = 2, .near = -1, .fail_after = -1,
				.fail_status = IBV_WC_RETRY_EXC_ERR,
				.fail_rank = -1};
	if (!s || !strcmp(s, "1") || !*s)
		return 0;
	while ((rc = mrail_params_next(&pos, key, sizeof key, val,
				       sizeof val)) == 1) {
		char *end;
		long long v = strtoll(val, &end, 0);
		bool num = *val && !*end;
		if (!strcmp(key, "fail_status")) {
			if (!strcmp(val, "retry"))
				c->fail_status = IBV_WC_RETRY_EXC_ERR;
			else if (!strcmp(val, "remote_access"))
				c->fail_status = IBV_WC_REM_ACCESS_ERR;
			else if (!strcmp(val, "rnr"))
				c->fail_status = IBV_WC_RNR_RETRY_EXC_ERR;
			else
				goto bad;
			continue;
		}
		if (!num)
			goto bad;
		if (!strcmp(key, "devices") && v >= 1 && v <= VDBL_MAX_DEV)
			c->devices = (int)v;
		else if (!strcmp(key, "ports") && v >= 1 && v <= VDBL_MAX_PORT)
			c->ports = (int)v;
		else if (!strcmp(key, "speed") && v >= 1 && v <= 255)
			c->speed = (int)v;
		else if (!strcmp(key, "width") && v >= 1 && v <= 255)
			c->width = (int)v;
		else if (!strcmp(key, "near") && v >= -1 && v < VDBL_MAX_DEV)
			c->near = (int)v;
		else if (!strcmp(key, "fail_after") && v >= 0)
			c->fail_after = v;
		else if (!strcmp(key, "fail_min") && v >= 0)
			c->fail_min = v;
		else if (!strcmp(key, "fail_rank") && v >= 0)
			c->fail_rank = (int)v;
		else
			goto bad;
	}
	if (rc == 0)
		return 0;
	mrail_error("verbs double: malformed configuration '%s'", s);
	return -1;
bad:
	mrail_error("verbs double: bad entry %s=%s in MRAIL_VERBS_DOUBLE='%s' "
		    "(docs/driver-verbs.md lists the keys)",
		    key, val, s);
	return -1;
}

/* ---- the shared segment ------------------------------------------------ */

void vdbl_lock(struct vdbl_shm *s)
{
	if (pthread_mutex_lock(&s->lock) == EOWNERDEAD)
		pthread_mutex_consistent(&s->lock);
}

void vdbl_unlock(struct vdbl_shm *s)
{
	pthread_mutex_unlock(&s->lock);
}

/* Segments of processes that died without closing (killed tests). */
static void unlink_stale(void)
{
	DIR *d = opendir("/dev/shm");
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		char *end, name[300];
		long pid;
		if (strncmp(e->d_name, "mrail-vdbl.", 11))
			continue;
		pid = strtol(e->d_name + 11, &end, 10);
		if (*end || pid <= 0 || kill((pid_t)pid, 0) == 0 ||
		    errno != ESRCH)
			continue;
		snprintf(name, sizeof name, "/%s", e->d_name);
		shm_unlink(name);
	}
	closedir(d);
}

static int shm_create(struct vdbl_global *g)
{
	pthread_mutexattr_t ma;
	struct vdbl_shm *s;
	int fd;

	snprintf(g->shm_name, sizeof g->shm_name, "/mrail-vdbl.%d",
		 (int)getpid());
	unlink_stale();
	shm_unlink(g->shm_name); /* a dead process with our pid left it */
	fd = shm_open(g->shm_name, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0 || ftruncate(fd, sizeof *s) < 0) {
		mrail_error("verbs double: shared segment %s: %s", g->shm_name,
			    strerror(errno));
		if (fd >= 0)
			close(fd);
		shm_unlink(g->shm_name);
		return -1;
	}
	s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (s == MAP_FAILED) {
		shm_unlink(g->shm_name);
		return -1;
	}
	s->pid = (uint32_t)getpid();
	if (getrandom(&s->nonce, sizeof s->nonce, 0) != sizeof s->nonce)
		s->nonce = (uint32_t)getpid() * 2654435761u;
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
	pthread_mutex_init(&s->lock, &ma);
	pthread_mutexattr_destroy(&ma);
	s->version = VDBL_VERSION;
	__atomic_store_n(&s->magic, VDBL_MAGIC, __ATOMIC_RELEASE);
	g->shm = s;
	return 0;
}

static void shm_destroy(struct vdbl_global *g)
{
	vdbl_lock(g->shm);
	/* Peers posting to us from now on find no QP: retry exceeded. */
	for (int i = 0; i < VDBL_MAX_QP; i++)
		g->shm->qp[i].used = 0;
	g->shm->magic = 0;
	vdbl_unlock(g->shm);
	munmap(g->shm, sizeof *g->shm);
	shm_unlink(g->shm_name);
	g->shm = NULL;
}

void vdbl_gid(int dev, int port, uint8_t gid[16])
{
	uint32_t pid = vdbl_g.shm->pid;

	memset(gid, 0, 16);
	gid[0] = 0xfe;
	gid[1] = 0x80;
	gid[8] = (uint8_t)(pid >> 24);
	gid[9] = (uint8_t)(pid >> 16);
	gid[10] = (uint8_t)(pid >> 8);
	gid[11] = (uint8_t)pid;
	gid[12] = (uint8_t)dev;
	gid[13] = (uint8_t)port;
	gid[14] = (uint8_t)(vdbl_g.shm->nonce >> 8);
	gid[15] = (uint8_t)vdbl_g.shm->nonce;
}

#define PEER_CACHE 64
static struct {
	uint32_t pid;
	struct vdbl_shm *shm;
} peers[PEER_CACHE];
static int npeers;

struct vdbl_shm *vdbl_peer(const uint8_t gid[16])
{
	uint32_t pid = (uint32_t)gid[8] << 24 | (uint32_t)gid[9] << 16 |
		       (uint32_t)gid[10] << 8 | gid[11];
	uint16_t nonce = (uint16_t)(gid[14] << 8 | gid[15]);
	struct vdbl_shm *s = NULL;
	char name[64];
	int fd, slot = -1;

	if (gid[0] != 0xfe || gid[1] != 0x80)
		return NULL;
	pthread_mutex_lock(&vdbl_g.mu);
	if (vdbl_g.shm && pid == vdbl_g.shm->pid) {
		s = vdbl_g.shm;
		goto out;
	}
	for (int i = 0; i < npeers; i++)
		if (peers[i].pid == pid) {
			slot = i;
			if (__atomic_load_n(&peers[i].shm->magic,
					    __ATOMIC_ACQUIRE) == VDBL_MAGIC &&
			    (uint16_t)peers[i].shm->nonce == nonce) {
				s = peers[i].shm;
				goto out;
			}
			munmap(peers[i].shm, sizeof *s); /* pid reused */
		}
	snprintf(name, sizeof name, "/mrail-vdbl.%u", pid);
	fd = shm_open(name, O_RDWR, 0);
	if (fd < 0)
		goto gone;
	s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (s == MAP_FAILED) {
		s = NULL;
		goto gone;
	}
	if (slot < 0) {
		if (npeers == PEER_CACHE) {
			munmap(peers[0].shm, sizeof *s);
			slot = 0;
		} else {
			slot = npeers++;
		}
	}
	peers[slot].pid = pid;
	peers[slot].shm = s;
	if (__atomic_load_n(&s->magic, __ATOMIC_ACQUIRE) != VDBL_MAGIC ||
	    s->version != VDBL_VERSION || (uint16_t)s->nonce != nonce)
		s = NULL;
	goto out;
gone:
	if (slot >= 0) {
		peers[slot] = peers[--npeers];
	}
out:
	pthread_mutex_unlock(&vdbl_g.mu);
	return s;
}

int vdbl_push_wc(struct vdbl_shm *s, int cq, const struct vdbl_swc *wc)
{
	struct vdbl_scq *c;

	if (cq < 0 || cq >= VDBL_MAX_CQ || !s->cq[cq].used)
		return -1;
	c = &s->cq[cq];
	if (c->count >= c->size) {
		mrail_error("verbs double: CQ %d of pid %u overrun (%u entries)"
			    ": completion lost",
			    cq, s->pid, c->size);
		return -1;
	}
	c->ring[(c->head + c->count) % c->size] = *wc;
	c->count++;
	if (!c->armed)
		return -1;
	c->armed = 0;
	return c->channel;
}

static socklen_t channel_addr(struct sockaddr_un *sun, uint32_t pid,
			      uint32_t nonce, int id)
{
	int n;

	memset(sun, 0, sizeof *sun);
	sun->sun_family = AF_UNIX;
	n = snprintf(sun->sun_path + 1, sizeof sun->sun_path - 1,
		     "mrail-vdbl.%u.%u.ch%d", pid, nonce, id);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
			   (size_t)n);
}

void vdbl_notify(const struct vdbl_shm *s, int channel)
{
	struct sockaddr_un sun;
	socklen_t len;
	int fd;

	if (channel < 0)
		return;
	len = channel_addr(&sun, s->pid, s->nonce, channel);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	/* A full socket is already readable: nothing lost. */
	sendto(fd, "", 1, MSG_DONTWAIT, (struct sockaddr *)&sun, len);
	close(fd);
}

bool vdbl_mr_ok(const struct vdbl_shm *s, uint32_t key, uint64_t addr,
		uint64_t len, uint32_t access)
{
	const struct vdbl_smr *m = &s->mr[key % VDBL_MAX_MR];

	return m->used && m->key == key && addr >= m->addr &&
	       len <= m->len && addr - m->addr <= m->len - len &&
	       (m->access & access) == access;
}

/* ---- devices and contexts ---------------------------------------------- */

static struct ibv_device **vdbl_get_device_list(int *num)
{
	struct vdbl_global *g = &vdbl_g;
	struct ibv_device **list = calloc((size_t)g->conf.devices + 1,
					  sizeof *list);

	if (!list) {
		errno = ENOMEM;
		return NULL;
	}
	for (int i = 0; i < g->conf.devices; i++) {
		struct vdbl_device *d = &g->devs[i];
		d->index = i;
		snprintf(d->dev.name, sizeof d->dev.name, "vdbl%d", i);
		snprintf(d->dev.dev_name, sizeof d->dev.dev_name, "uverbs%d",
			 i);
		d->dev.node_type = IBV_NODE_CA;
		d->dev.transport_type = IBV_TRANSPORT_IB;
		list[i] = &d->dev;
	}
	if (num)
		*num = g->conf.devices;
	return list;
}

static void vdbl_free_device_list(struct ibv_device **list)
{
	free(list);
}

static const char *vdbl_device_name(struct ibv_device *dev)
{
	return dev->name;
}

static struct ibv_context *vdbl_open_device(struct ibv_device *dev)
{
	struct vdbl_global *g = &vdbl_g;
	struct vdbl_ctx *c = calloc(1, sizeof *c);

	if (!c)
		return NULL;
	pthread_mutex_lock(&g->mu);
	if (g->pid != getpid()) {
		/* A forked child: the parent's segment is not ours. */
		g->shm = NULL;
		g->opens = 0;
		g->rc_posted = 0;
		memset(g->cqs, 0, sizeof g->cqs);
		npeers = 0;
		g->pid = getpid();
	}
	if (g->opens == 0 && shm_create(g) < 0) {
		pthread_mutex_unlock(&g->mu);
		free(c);
		errno = ENODEV;
		return NULL;
	}
	g->opens++;
	pthread_mutex_unlock(&g->mu);
	c->d = (struct vdbl_device *)dev;
	c->ctx.device = dev;
	c->ctx.async_fd = -1;
	c->ctx.num_comp_vectors = 1;
	return &c->ctx;
}

static int vdbl_close_device(struct ibv_context *ctx)
{
	struct vdbl_global *g = &vdbl_g;

	pthread_mutex_lock(&g->mu);
	if (--g->opens == 0 && g->shm)
		shm_destroy(g);
	pthread_mutex_unlock(&g->mu);
	free(ctx);
	return 0;
}

static int vdbl_query_device(struct ibv_context *ctx,
			     struct ibv_device_attr *a)
{
	(void)ctx;
	memset(a, 0, sizeof *a);
	snprintf(a->fw_ver, sizeof a->fw_ver, "vdbl-%u", VDBL_VERSION);
	a->max_mr_size = VDBL_MAX_MSG;
	a->max_qp = VDBL_MAX_QP;
	a->max_qp_wr = 4096;
	a->max_sge = VDBL_MAX_SGE;
	a->max_cq = VDBL_MAX_CQ;
	a->max_cqe = VDBL_CQ_MAX;
	a->max_mr = VDBL_MAX_MR;
	a->max_qp_rd_atom = 16;
	a->max_qp_init_rd_atom = 16;
	a->phys_port_cnt = (uint8_t)vdbl_g.conf.ports;
	return 0;
}

static int vdbl_query_port(struct ibv_context *ctx, uint8_t port,
			   struct ibv_port_attr *a)
{
	(void)ctx;
	if (port < 1 || port > vdbl_g.conf.ports)
		return EINVAL;
	memset(a, 0, sizeof *a);
	a->state = IBV_PORT_ACTIVE;
	a->max_mtu = IBV_MTU_4096;
	a->active_mtu = IBV_MTU_4096;
	a->gid_tbl_len = 1;
	a->max_msg_sz = (uint32_t)VDBL_MAX_MSG;
	a->active_speed = (uint8_t)vdbl_g.conf.speed;
	a->active_width = (uint8_t)vdbl_g.conf.width;
	a->phys_state = 5; /* LinkUp */
	a->link_layer = IBV_LINK_LAYER_ETHERNET;
	return 0;
}

static int vdbl_query_gid(struct ibv_context *ctx, uint8_t port, int index,
			  union ibv_gid *gid)
{
	struct vdbl_ctx *c = (struct vdbl_ctx *)ctx;

	if (port < 1 || port > vdbl_g.conf.ports || index != 0)
		return EINVAL;
	vdbl_gid(c->d->index, port, gid->raw);
	return 0;
}

static int vdbl_device_cpuset(hwloc_topology_t topo, struct ibv_device *dev,
			      hwloc_cpuset_t set)
{
	struct vdbl_device *d = (struct vdbl_device *)dev;
	int near = vdbl_g.conf.near;

	/* near=K: device K holds the CPUs we are bound to, the others none
	 * of them (another socket). */
	if (near < 0 || d->index == near) {
		if (hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_PROCESS) < 0)
			hwloc_bitmap_copy(
				set, hwloc_topology_get_complete_cpuset(topo));
	} else {
		hwloc_bitmap_zero(set);
	}
	return 0;
}

/* ---- PD and MR --------------------------------------------------------- */

static struct ibv_pd *vdbl_alloc_pd(struct ibv_context *ctx)
{
	struct ibv_pd *pd = calloc(1, sizeof *pd);

	if (pd)
		pd->context = ctx;
	return pd;
}

static int vdbl_dealloc_pd(struct ibv_pd *pd)
{
	free(pd);
	return 0;
}

static struct ibv_mr *vdbl_reg_mr(struct ibv_pd *pd, void *addr, size_t len,
				  int access)
{
	struct vdbl_shm *s = vdbl_g.shm;
	struct ibv_mr *mr;
	int slot = -1;

	if (!addr || !len || len > VDBL_MAX_MSG) {
		errno = EINVAL;
		return NULL;
	}
	/* An HCA refuses remote write without local write. */
	if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IBV_ACCESS_LOCAL_WRITE)) {
		errno = EINVAL;
		return NULL;
	}
	mr = calloc(1, sizeof *mr);
	if (!mr)
		return NULL;
	vdbl_lock(s);
	for (int i = 0; i < VDBL_MAX_MR; i++) {
		int k = (int)((s->mr_gen + (uint32_t)i) % VDBL_MAX_MR);
		if (k != 0 && !s->mr[k].used) { /* key 0 never valid */
			slot = k;
			break;
		}
	}
	if (slot >= 0) {
		struct vdbl_smr *m = &s->mr[slot];
		s->mr_gen++;
		m->used = 1;
		m->key = ((s->mr_gen & 0x3ffffu) << VDBL_MR_SLOT_BITS) |
			 (uint32_t)slot;
		m->addr = (uintptr_t)addr;
		m->len = len;
		m->access = (uint32_t)access;
		mr->lkey = mr->rkey = m->key;
	}
	vdbl_unlock(s);
	if (slot < 0) {
		free(mr);
		errno = ENOMEM;
		return NULL;
	}
	mr->context = pd->context;
	mr->pd = pd;
	mr->addr = addr;
	mr->length = len;
	mr->handle = (uint32_t)slot;
	return mr;
}

static int vdbl_dereg_mr(struct ibv_mr *mr)
{
	struct vdbl_shm *s = vdbl_g.shm;
	struct vdbl_smr *m = &s->mr[mr->handle % VDBL_MAX_MR];

	vdbl_lock(s);
	if (!m->used || m->key != mr->lkey) {
		vdbl_unlock(s);
		return EINVAL;
	}
	m->used = 0;
	m->key = 0;
	vdbl_unlock(s);
	free(mr);
	return 0;
}

/* ---- completion channels and CQs --------------------------------------- */

static struct ibv_comp_channel *vdbl_create_channel(struct ibv_context *ctx)
{
	struct vdbl_ch *ch = calloc(1, sizeof *ch);
	struct sockaddr_un sun;
	socklen_t len;

	if (!ch)
		return NULL;
	pthread_mutex_lock(&vdbl_g.mu);
	ch->id = vdbl_g.next_channel++;
	pthread_mutex_unlock(&vdbl_g.mu);
	ch->ch.context = ctx;
	ch->ch.fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	len = channel_addr(&sun, vdbl_g.shm->pid, vdbl_g.shm->nonce, ch->id);
	if (ch->ch.fd < 0 ||
	    bind(ch->ch.fd, (struct sockaddr *)&sun, len) < 0) {
		mrail_error("verbs double: completion channel: %s",
			    strerror(errno));
		if (ch->ch.fd >= 0)
			close(ch->ch.fd);
		free(ch);
		return NULL;
	}
	return &ch->ch;
}

static int vdbl_destroy_channel(struct ibv_comp_channel *ch)
{
	close(ch->fd);
	free(ch);
	return 0;
}

static struct ibv_cq *vdbl_create_cq(struct ibv_context *ctx, int cqe,
				     void *cq_context,
				     struct ibv_comp_channel *ch, int vector)
{
	struct vdbl_shm *s = vdbl_g.shm;
	struct vdbl_cq *c;
	int slot = -1;

	(void)vector;
	if (cqe < 1 || cqe > VDBL_CQ_MAX) {
		errno = EINVAL;
		return NULL;
	}
	c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	vdbl_lock(s);
	for (int i = 0; i < VDBL_MAX_CQ && slot < 0; i++)
		if (!s->cq[i].used)
			slot = i;
	if (slot >= 0) {
		struct vdbl_scq *q = &s->cq[slot];
		q->used = 1;
		q->size = (uint32_t)cqe;
		q->head = q->count = q->armed = 0;
		q->channel = ch ? ((struct vdbl_ch *)ch)->id : -1;
	}
	vdbl_unlock(s);
	if (slot < 0) {
		free(c);
		errno = ENOMEM;
		return NULL;
	}
	c->slot = slot;
	c->cq.context = ctx;
	c->cq.channel = ch;
	c->cq.cq_context = cq_context;
	c->cq.cqe = cqe;
	pthread_mutex_lock(&vdbl_g.mu);
	vdbl_g.cqs[slot] = c;
	pthread_mutex_unlock(&vdbl_g.mu);
	return &c->cq;
}

static int vdbl_destroy_cq(struct ibv_cq *cq)
{
	struct vdbl_cq *c = (struct vdbl_cq *)cq;
	struct vdbl_shm *s = vdbl_g.shm;

	vdbl_lock(s);
	for (int i = 0; i < VDBL_MAX_QP; i++)
		if (s->qp[i].used && (s->qp[i].send_cq == c->slot ||
				      s->qp[i].recv_cq == c->slot)) {
			vdbl_unlock(s);
			return EBUSY; /* as an HCA: QPs still use it */
		}
	s->cq[c->slot].used = 0;
	vdbl_unlock(s);
	pthread_mutex_lock(&vdbl_g.mu);
	vdbl_g.cqs[c->slot] = NULL;
	pthread_mutex_unlock(&vdbl_g.mu);
	free(c);
	return 0;
}

static int vdbl_req_notify(struct ibv_cq *cq, int solicited_only)
{
	struct vdbl_shm *s = vdbl_g.shm;

	(void)solicited_only;
	vdbl_lock(s);
	s->cq[((struct vdbl_cq *)cq)->slot].armed = 1;
	vdbl_unlock(s);
	return 0;
}

static int vdbl_get_cq_event(struct ibv_comp_channel *ch, struct ibv_cq **cq,
			     void **cq_context)
{
	char b;
	struct ibv_cq *found = NULL;

	/* Honours O_NONBLOCK on the fd, as libibverbs' read() does. */
	if (recv(ch->fd, &b, 1, 0) < 0)
		return -1;
	pthread_mutex_lock(&vdbl_g.mu);
	for (int i = 0; i < VDBL_MAX_CQ && !found; i++)
		if (vdbl_g.cqs[i] && vdbl_g.cqs[i]->cq.channel == ch)
			found = &vdbl_g.cqs[i]->cq;
	pthread_mutex_unlock(&vdbl_g.mu);
	if (!found) {
		errno = EAGAIN;
		return -1;
	}
	*cq = found;
	*cq_context = found->cq_context;
	return 0;
}

static void vdbl_ack_cq_events(struct ibv_cq *cq, unsigned n)
{
	(void)cq;
	(void)n;
}

static int vdbl_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	struct vdbl_shm *s = vdbl_g.shm;
	struct vdbl_scq *q = &s->cq[((struct vdbl_cq *)cq)->slot];
	int got = 0;

	vdbl_lock(s);
	while (got < n && q->count) {
		const struct vdbl_swc *w = &q->ring[q->head];
		memset(&wc[got], 0, sizeof wc[got]);
		wc[got].wr_id = w->wr_id;
		wc[got].status = (enum ibv_wc_status)w->status;
		wc[got].opcode = (enum ibv_wc_opcode)w->opcode;
		wc[got].byte_len = w->byte_len;
		wc[got].qp_num = w->qp_num;
		wc[got].src_qp = w->src_qp;
		wc[got].wc_flags = w->wc_flags;
		q->head = (q->head + 1) % q->size;
		q->count--;
		got++;
	}
	vdbl_unlock(s);
	return got;
}

/* ---- address handles --------------------------------------------------- */

static struct ibv_ah *vdbl_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *a)
{
	struct vdbl_ah *ah;

	/* RoCE: every address is a GID. */
	if (!a->is_global) {
		errno = EINVAL;
		return NULL;
	}
	ah = calloc(1, sizeof *ah);
	if (!ah)
		return NULL;
	ah->ah.context = pd->context;
	ah->ah.pd = pd;
	ah->dgid = a->grh.dgid;
	return &ah->ah;
}

static int vdbl_destroy_ah(struct ibv_ah *ah)
{
	free(ah);
	return 0;
}

static const struct mrail_verbs_api vdbl_api = {
	.name = "double",
	.get_device_list = vdbl_get_device_list,
	.free_device_list = vdbl_free_device_list,
	.get_device_name = vdbl_device_name,
	.open_device = vdbl_open_device,
	.close_device = vdbl_close_device,
	.query_device = vdbl_query_device,
	.query_port = vdbl_query_port,
	.query_gid = vdbl_query_gid,
	.device_cpuset = vdbl_device_cpuset,
	.alloc_pd = vdbl_alloc_pd,
	.dealloc_pd = vdbl_dealloc_pd,
	.reg_mr = vdbl_reg_mr,
	.dereg_mr = vdbl_dereg_mr,
	.create_comp_channel = vdbl_create_channel,
	.destroy_comp_channel = vdbl_destroy_channel,
	.create_cq = vdbl_create_cq,
	.destroy_cq = vdbl_destroy_cq,
	.req_notify_cq = vdbl_req_notify,
	.get_cq_event = vdbl_get_cq_event,
	.ack_cq_events = vdbl_ack_cq_events,
	.poll_cq = vdbl_poll_cq,
	.create_qp = vdbl_create_qp,
	.modify_qp = vdbl_modify_qp,
	.destroy_qp = vdbl_destroy_qp,
	.post_send = vdbl_post_send,
	.post_recv = vdbl_post_recv,
	.create_ah = vdbl_create_ah,
	.destroy_ah = vdbl_destroy_ah,
};

const struct mrail_verbs_api *mrail_verbs_double_api(const char *conf)
{
	struct vdbl_conf c;
	const char *rank = getenv("MRAIL_RANK");

	if (parse_conf(conf, &c) < 0)
		return NULL;
	pthread_mutex_lock(&vdbl_g.mu);
	if (vdbl_g.opens == 0 || vdbl_g.pid != getpid()) {
		vdbl_g.conf = c;
		vdbl_g.fail_here = c.fail_after >= 0 &&
				   (c.fail_rank < 0 ||
				    (rank && atoi(rank) == c.fail_rank));
	}
	pthread_mutex_unlock(&vdbl_g.mu);
	return &vdbl_api;
}

const char *mrail_verbs_double_why(void)
{
	return "refused its configuration";
}

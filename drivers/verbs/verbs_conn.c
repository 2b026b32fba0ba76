/*
 * Verbs driver: connection establishment without sockets. Each port used
 * by the engine has one UD QP, the "listener", whose QPN and GID/LID form
 * the address blob. connect() creates an RC QP and sends a REQ datagram
 * (its QPN, PSN, MTU, credits) to the peer's listener, resending it until
 * a REP comes back; the listener's side creates its RC QP, takes it to
 * RTS, answers REP and reports accepted(). The connector then takes its
 * QP to RTS and sends RTU as its first RC message; the accepting side
 * sends nothing before a message arrived (its peer may not be in RTR
 * yet). DISC tells a peer its connection failed here. Formats are in
 * docs/driver-verbs.md.
 */
#include "drivers/verbs/verbs_internal.h"
#include "util/clock.h"
#include "util/log.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint8_t *ud_slot(struct vb_port *p, int i)
{
	return p->ud_buf + (size_t)i * VB_UD_BUF;
}

static int ud_post_recv(struct vb_port *p, int i)
{
	struct ibv_sge sge = {(uintptr_t)ud_slot(p, i), VB_UD_BUF,
			      p->ud_mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = (uintptr_t)&p->ud_wr[i],
				 .sg_list = &sge, .num_sge = 1}, *bad;

	return p->dev->drv->api->post_recv(p->ud, &wr, &bad);
}

int vb_listener_open(struct vb_port *p)
{
	const struct mrail_verbs_api *api = p->dev->drv->api;
	size_t bytes = (size_t)(VB_UD_DEPTH + VB_UD_SEND) * VB_UD_BUF;
	struct ibv_qp_init_attr ia = {0};
	struct ibv_qp_attr a = {0};

	if (p->ud)
		return 0;
	p->ud_buf = aligned_alloc(4096, bytes);
	p->ud_mr = p->ud_buf ? api->reg_mr(p->dev->pd, p->ud_buf, bytes,
					   IBV_ACCESS_LOCAL_WRITE)
			     : NULL;
	ia.send_cq = ia.recv_cq = p->dev->cq;
	ia.qp_type = IBV_QPT_UD;
	ia.cap.max_send_wr = VB_UD_SEND;
	ia.cap.max_recv_wr = VB_UD_DEPTH;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	p->ud = p->ud_mr ? api->create_qp(p->dev->pd, &ia) : NULL;
	if (!p->ud)
		goto fail;
	a.qp_state = IBV_QPS_INIT;
	a.port_num = p->num;
	a.qkey = VB_QKEY;
	if (api->modify_qp(p->ud, &a,
			   IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				   IBV_QP_QKEY))
		goto fail;
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTR;
	if (api->modify_qp(p->ud, &a, IBV_QP_STATE))
		goto fail;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	if (api->modify_qp(p->ud, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		goto fail;
	for (int i = 0; i < VB_UD_DEPTH + VB_UD_SEND; i++)
		p->ud_wr[i] = (struct vb_wr){
			i < VB_UD_DEPTH ? VB_WR_UD_RECV : VB_WR_UD_SEND, i,
			NULL, p, NULL};
	for (int i = 0; i < VB_UD_DEPTH; i++)
		if (ud_post_recv(p, i))
			goto fail;
	mrail_debug("verbs: %s listens on UD QP %#x", p->name, p->ud->qp_num);
	return 0;
fail:
	mrail_error("verbs: %s: cannot set up the UD listener QP: %s", p->name,
		    strerror(errno));
	vb_listener_close(p);
	return MRAIL_ERR_IO;
}

void vb_listener_close(struct vb_port *p)
{
	const struct mrail_verbs_api *api = p->dev ? p->dev->drv->api : NULL;

	if (p->ud)
		api->destroy_qp(p->ud);
	if (p->ud_mr)
		api->dereg_mr(p->ud_mr);
	free(p->ud_buf);
	p->ud = NULL;
	p->ud_mr = NULL;
	p->ud_buf = NULL;
}

struct ibv_ah *vb_ah_create(struct vb_port *p, const union ibv_gid *gid,
			    uint16_t lid)
{
	struct ibv_ah_attr a = {0};
	struct ibv_ah *ah;

	a.port_num = p->num;
	a.dlid = lid;
	if (p->eth || !lid) {
		a.is_global = 1;
		a.grh.dgid = *gid;
		a.grh.sgid_index = (uint8_t)p->dev->drv->gid_index;
		a.grh.hop_limit = 64;
	}
	ah = p->dev->drv->api->create_ah(p->dev->pd, &a);
	if (!ah)
		mrail_error("verbs: %s: cannot create an address handle: %s",
			    p->name, strerror(errno));
	return ah;
}

void vb_cm_send(struct vb_port *p, struct ibv_ah *ah, uint32_t ud_qpn,
		int type, const struct mrail_drv_ep *ep, uint32_t target)
{
	int slot = VB_UD_DEPTH + p->ud_send_next;
	uint8_t *m = ud_slot(p, slot);
	struct ibv_sge sge = {(uintptr_t)m, VB_CM_LEN, p->ud_mr->lkey};
	struct ibv_send_wr wr = {0}, *bad;

	if (!ah || !p->ud || p->ud_send_busy >= VB_UD_SEND)
		return; /* datagrams may be lost: REQ is resent */
	p->ud_send_next = (p->ud_send_next + 1) % VB_UD_SEND;
	memset(m, 0, VB_CM_LEN);
	memcpy(m, "MRVC", 4);
	m[4] = VB_CM_VERSION;
	m[5] = (uint8_t)type;
	m[6] = p->num;
	m[7] = (uint8_t)p->attr.active_mtu;
	vb_put32(m + 8, ep->req_id);
	vb_put32(m + 12, ep->qp ? ep->qp->qp_num : 0);
	vb_put32(m + 16, ep->psn);
	vb_put32(m + 20, p->ud->qp_num);
	m[24] = (uint8_t)p->attr.lid;
	m[25] = (uint8_t)(p->attr.lid >> 8);
	m[26] = VB_RECV_DEPTH & 0xff;
	m[27] = VB_RECV_DEPTH >> 8;
	memcpy(m + 28, p->gid.raw, 16);
	vb_put32(m + 44, target);
	m[48] = (uint8_t)p->dev->index;
	wr.wr_id = (uintptr_t)&p->ud_wr[slot];
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = ud_qpn;
	wr.wr.ud.remote_qkey = VB_QKEY;
	if (p->dev->drv->api->post_send(p->ud, &wr, &bad))
		mrail_warn("verbs: %s: posting a handshake datagram failed",
			   p->name);
	else
		p->ud_send_busy++;
}

struct cm_msg {
	int type;
	uint8_t port, mtu, dev;
	uint32_t req_id, qpn, psn, ud_qpn, target;
	uint16_t lid, credits;
	union ibv_gid gid;
};

static int cm_parse(const uint8_t *m, uint32_t len, struct cm_msg *c)
{
	if (len < VB_CM_LEN || memcmp(m, "MRVC", 4) ||
	    m[4] != VB_CM_VERSION || m[5] < VB_CM_REQ || m[5] > VB_CM_REJ)
		return -1;
	c->type = m[5];
	c->port = m[6];
	c->mtu = m[7];
	c->req_id = vb_get32(m + 8);
	c->qpn = vb_get32(m + 12);
	c->psn = vb_get32(m + 16) & 0xffffff;
	c->ud_qpn = vb_get32(m + 20);
	c->lid = (uint16_t)(m[24] | m[25] << 8);
	c->credits = (uint16_t)(m[26] | m[27] << 8);
	memcpy(c->gid.raw, m + 28, 16);
	c->target = vb_get32(m + 44);
	c->dev = m[48];
	if (c->mtu < IBV_MTU_256 || c->mtu > IBV_MTU_4096 || !c->credits ||
	    c->credits > 4096)
		return -1;
	return 0;
}

static void peer_from(struct mrail_drv_ep *ep, const struct cm_msg *c)
{
	ep->rgid = c->gid;
	ep->rlid = c->lid;
	ep->rqpn = c->qpn;
	ep->rpsn = c->psn;
	ep->rud_qpn = c->ud_qpn;
	ep->rdev = c->dev;
	ep->mtu = c->mtu;
	ep->credits = c->credits;
	snprintf(ep->dc.remote_name, sizeof ep->dc.remote_name,
		 "qp%#x@%02x%02x:%02x%02x:%02x%02x:%02x%02x lid %u", c->qpn,
		 c->gid.raw[8], c->gid.raw[9], c->gid.raw[10], c->gid.raw[11],
		 c->gid.raw[12], c->gid.raw[13], c->gid.raw[14],
		 c->gid.raw[15], c->lid);
}

static void on_req(struct vb_port *p, const struct cm_msg *c)
{
	struct mrail_drv *drv = p->dev->drv;
	struct mrail_drv_ep *ep;
	struct ibv_ah *ah;
	struct mrail_list *pos, *tmp;
	void *ctx;

	dc_foreach_ep(pos, tmp, &drv->dc) {
		ep = (struct mrail_drv_ep *)dc_ep_entry(pos);
		if (ep->dc.state != DC_EP_CLOSED && ep->accepted &&
		    ep->port == p && ep->rqpn == c->qpn &&
		    !memcmp(ep->rgid.raw, c->gid.raw, 16)) {
			/* Our REP was lost: say it again. */
			if (ep->dc.state == DC_EP_CONNECTED)
				vb_cm_send(p, ep->ah, ep->rud_qpn, VB_CM_REP,
					   ep, c->qpn);
			return;
		}
	}
	ep = calloc(1, sizeof *ep);
	if (!ep)
		return;
	ep->dc.drv = &drv->dc; /* set-up needs it; listed once set up */
	ep->port = p;
	ep->accepted = true;
	ep->req_id = c->req_id;
	peer_from(ep, c);
	ep->ah = vb_ah_create(p, &c->gid, c->lid);
	if (!ep->ah || vb_ep_setup(ep) || vb_qp_connect(ep)) {
		ah = ep->ah ? NULL : vb_ah_create(p, &c->gid, c->lid);
		vb_cm_send(p, ep->ah ? ep->ah : ah, c->ud_qpn, VB_CM_REJ, ep,
			   c->qpn);
		if (ah)
			drv->api->destroy_ah(ah);
		vb_ep_destroy(ep);
		return;
	}
	vb_ep_add(drv, ep, DC_EP_CONNECTED, NULL);
	snprintf(ep->dc.local_name, sizeof ep->dc.local_name, "%s/qp%#x", p->name,
		 ep->qp->qp_num);
	vb_cm_send(p, ep->ah, ep->rud_qpn, VB_CM_REP, ep, c->qpn);
	ctx = drv->dc.base.up->accepted(drv->dc.base.engine_ctx, ep);
	if (ep->dc.state == DC_EP_CLOSED)
		return;
	if (!ctx) {
		vb_cm_send(p, ep->ah, ep->rud_qpn, VB_CM_DISC, ep, ep->rqpn);
		dc_ep_close(&ep->dc);
		return;
	}
	ep->dc.ctx = ctx;
}

static void connect_failed(struct mrail_drv_ep *ep, const char *why)
{
	mrail_warn("verbs: connection from %s to %s failed: %s",
		   ep->dc.local_name, ep->dc.remote_name, why);
	ep->dc.state = DC_EP_FAILED;
	vb_drv(ep)->dc.base.up->connected(ep->dc.ctx, MRAIL_ERR_PEER);
	if (ep->dc.state != DC_EP_CLOSED)
		vb_ep_fail_pending(ep, MRAIL_ERR_PEER);
}

static void on_rep(struct vb_port *p, const struct cm_msg *c, int type)
{
	struct mrail_drv_ep *ep = vb_ep_by_qpn(p->dev->drv, p->dev, c->target);

	if (!ep || ep->dc.state != DC_EP_CONNECTING || ep->req_id != c->req_id)
		return; /* a late duplicate */
	if (type == VB_CM_REJ) {
		connect_failed(ep, "the peer refused it");
		return;
	}
	peer_from(ep, c);
	if (vb_qp_connect(ep)) {
		connect_failed(ep, "the QP did not reach RTS");
		return;
	}
	ep->dc.state = DC_EP_CONNECTED;
	ep->established = true;
	if (vb_send_rtu(ep)) {
		connect_failed(ep, "cannot post the RTU message");
		return;
	}
	mrail_debug("verbs: connected %s -> %s", ep->dc.local_name,
		    ep->dc.remote_name);
	vb_drv(ep)->dc.base.up->connected(ep->dc.ctx, 0);
}

static void on_disc(struct vb_port *p, const struct cm_msg *c)
{
	struct mrail_drv_ep *ep = vb_ep_by_qpn(p->dev->drv, p->dev, c->target);

	if (ep && ep->rqpn == c->qpn &&
	    !memcmp(ep->rgid.raw, c->gid.raw, 16))
		vb_ep_fail(ep, MRAIL_ERR_PEER, false,
			   "the peer reported a failure of this connection");
}

void vb_cm_recv(struct vb_port *p, const uint8_t *m, uint32_t len)
{
	struct cm_msg c;

	if (cm_parse(m, len, &c) < 0) {
		mrail_warn("verbs: %s: malformed handshake datagram of %u "
			   "bytes ignored",
			   p->name, len);
		return;
	}
	switch (c.type) {
	case VB_CM_REQ: on_req(p, &c); break;
	case VB_CM_REP:
	case VB_CM_REJ: on_rep(p, &c, c.type); break;
	case VB_CM_DISC: on_disc(p, &c); break;
	}
}

void vb_ud_completion(struct vb_port *p, const struct ibv_wc *wc)
{
	struct vb_wr *w = (struct vb_wr *)(uintptr_t)wc->wr_id;

	if (w->kind == VB_WR_UD_SEND) {
		p->ud_send_busy--;
		return;
	}
	if (wc->status != IBV_WC_SUCCESS || !p->ud)
		return; /* flushed: the listener is closing */
	if (wc->byte_len > 40)
		vb_cm_recv(p, ud_slot(p, w->idx) + 40, wc->byte_len - 40);
	if (p->ud && ud_post_recv(p, w->idx))
		mrail_warn("verbs: %s: reposting a listener receive failed",
			   p->name);
}

double vb_cm_retransmit(struct mrail_drv *drv, double now)
{
	double next = INFINITY;
	struct mrail_drv_ep *ep;

	struct mrail_list *pos, *tmp;

again:
	dc_foreach_ep(pos, tmp, &drv->dc) {
		ep = (struct mrail_drv_ep *)dc_ep_entry(pos);
		if (ep->dc.state != DC_EP_CONNECTING)
			continue;
		if (now >= ep->next_retx) {
			if (ep->tries >= VB_CONNECT_TRIES) {
				connect_failed(ep, "no answer from the peer's "
						   "listener");
				goto again; /* the list may have changed */
			}
			vb_cm_send(ep->port, ep->ah, ep->rud_qpn, VB_CM_REQ,
				   ep, 0);
			ep->tries++;
			ep->next_retx = now + VB_RETX;
		}
		if (ep->next_retx < next)
			next = ep->next_retx;
	}
	return next;
}

/*
 * Each rail's transfer-time model: the profile mrail-sample wrote for the
 * rail's identity if there is one (docs/mrail-sample.md), else the
 * driver's nominal figures. A bad profile is reported and ignored, never
 * fatal. The rail's identity is computed exactly as mrail-sample names it.
 */
#include "libmrail/busy.h"
#include "libmrail/engine.h"
#include "sampler/identity.h"
#include "sampler/predict.h"
#include "sampler/profile.h"
#include "util/log.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What mrail_rail_info() will say about the rail: the identity's source. */
static void rail_identity(const struct rail *r, struct mrail_rail_identity *id)
{
	const struct rail_plan *p = &r->gate->plan[r->index];
	struct mrail_rail_info info;

	memset(&info, 0, sizeof info);
	snprintf(info.driver, sizeof info.driver, "%s", r->stats.driver);
	snprintf(info.local_if, sizeof info.local_if, "%s", p->local_if);
	snprintf(info.remote_if, sizeof info.remote_if, "%s", p->remote_if);
	snprintf(info.remote_addr, sizeof info.remote_addr, "%s",
		 r->stats.remote);
	snprintf(info.local_addr, sizeof info.local_addr, "%s",
		 r->stats.local);
	info.conn_type = p->conn_type;
	info.speed_mbps = r->local->netif >= 0
		? r->engine->netifs[r->local->netif].speed_mbps : 0;
	mrail_rail_identity_of(&info, r->index, id);
}

static int load_profile(struct mrail_engine *e, struct rail *r)
{
	struct mrail_profile *prof;
	struct mrail_rail_identity id;
	char dir[MRAIL_PROFILE_PATH_MAX], path[MRAIL_PROFILE_PATH_MAX], err[512];
	struct mrail_rail_model *m;

	if (e->cfg.profile_dir)
		snprintf(dir, sizeof dir, "%s", e->cfg.profile_dir);
	else if (mrail_profile_dir(dir, sizeof dir))
		return MRAIL_ERR_NOT_FOUND;
	rail_identity(r, &id);
	if (mrail_profile_path(dir, &id, path, sizeof path))
		return MRAIL_ERR_NOT_FOUND;
	if (!(prof = malloc(sizeof *prof))) /* 24 KiB: not on the stack */
		return MRAIL_ERR_NOMEM;
	int rc = mrail_profile_load(path, prof, err, sizeof err);
	if (rc == MRAIL_OK)
		rc = mrail_model_from_profile(prof, &m);
	free(prof);
	if (rc == MRAIL_ERR_NOT_FOUND) {
		mrail_debug("%s rail %u: no profile %s", r->gate->name,
			    r->index, path);
		return rc;
	}
	if (rc != MRAIL_OK) {
		mrail_warn("%s rail %u: profile not used (%s); in-band or nominal model",
			   r->gate->name, r->index,
			   rc == MRAIL_ERR_INVALID ? err : mrail_strerror(rc));
		return rc;
	}
	r->threshold = mrail_model_threshold(m);
	rail_set_model(r, m, "profile");
	/* The profile knows where rendezvous starts paying, unless the user
	 * chose; bounded by what one packet carries. */
	if (e->eager_auto && r->threshold > 0) {
		size_t fit = e->packet_cap - sizeof(struct mrail_wire_pkt_hdr) -
			     sizeof(struct mrail_wire_eager) - 8;
		r->eager_max = r->threshold - 1 < fit ? r->threshold - 1 : fit;
	}
	mrail_info("%s rail %u: model from %s", r->gate->name, r->index, path);
	return MRAIL_OK;
}

void rail_load_model(struct mrail_engine *e, struct rail *r)
{
	uint64_t mbps = r->local->netif >= 0
		? e->netifs[r->local->netif].speed_mbps : 0;

	/* Until a profile or in-band samples say better: the link speed
	 * sysfs reports, else the driver's figure (rail_new). */
	r->model_source = r->local->caps.nominal_bandwidth > 0 ? "nominal"
							       : "default";
	if (mbps > 0) {
		r->bandwidth = (double)mbps * 1e6 / 8;
		r->model_source = "nominal";
	}
	r->threshold = 0;
	rail_set_model(r, NULL, r->model_source);
	if (load_profile(e, r) == MRAIL_OK)
		return;
	inband_model_for(e, r); /* measured at creation for this interface */
	if (strcmp(r->model_source, "in-band"))
		mrail_info("%s rail %u: %s model (%.0f MB/s, %.1f us)",
			   r->gate->name, r->index, r->model_source,
			   r->bandwidth / 1e6, r->latency * 1e6);
}

void rail_set_model(struct rail *r, struct mrail_rail_model *m,
		    const char *source)
{
	if (!m && mrail_model_from_nominal(r->bandwidth, r->latency, &m))
		m = NULL; /* figures out of range: keep the plain numbers */
	mrail_model_free(r->model);
	r->model = m;
	r->model_source = source;
	if (m) {
		r->bandwidth = mrail_model_bandwidth(m);
		r->latency = mrail_model_latency(m);
	}
}

/* One threshold per gate (a message's protocol is chosen before its
 * rail): the smallest of its rails', which a strategy that cuts
 * rendezvous payloads over the rails may lower (docs/split.md). */
void gate_update_eager_max(struct mrail_engine *e, struct gate *g)
{
	struct mrail_rail_view v[MRAIL_MAX_RAILS];
	unsigned n = gate_rail_views(g, v, VIEW_SEND);
	size_t m = SIZE_MAX;
	if (n == 0)
		return;
	for (unsigned i = 0; i < n; i++) {
		v[i].busy_until = 0;
		if (v[i].eager_max < m)
			m = v[i].eager_max;
	}
	if (e->eager_auto && e->strategy->eager_max) {
		size_t s = e->strategy->eager_max(e->strategy_state,
						  g->strategy_peer, v, n);
		if (s < m) {
			mrail_debug("%s: eager up to %zu bytes (strategy; "
				    "rails alone: %zu)", g->name, s, m);
			m = s;
		}
	}
	g->eager_max = m;
}

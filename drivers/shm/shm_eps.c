/*
 * Endpoint registry of the shm driver: the live list, the attention list
 * (endpoints with something to report from progress), and deferred
 * freeing: an endpoint closed inside progress stays allocated (on the
 * zombie list) until the outermost progress returns, so code that made
 * an upcall may still look at its state. Kept apart from the transport
 * so it can move onto drivers/common with the other drivers'.
 */
#include "drivers/shm/shm_internal.h"

#include <stdlib.h>

struct mrail_drv_ep *shm_ep_new(struct mrail_drv *drv, enum shm_ep_state st,
				void *ctx)
{
	struct mrail_drv_ep *ep = calloc(1, sizeof *ep);

	if (!ep)
		return NULL;
	ep->drv = drv;
	ep->ctx = ctx;
	ep->state = st;
	ep->sock = (struct shm_pollable){SHM_OBJ_SOCK, -1, ep};
	ep->bell = (struct shm_pollable){SHM_OBJ_BELL, -1, ep};
	ep->peer_bell = -1;
	ep->next = drv->eps;
	if (drv->eps)
		drv->eps->prev = ep;
	drv->eps = ep;
	return ep;
}

static void ep_unlink(struct mrail_drv_ep *ep)
{
	struct mrail_drv *drv = ep->drv;

	if (ep->prev)
		ep->prev->next = ep->next;
	else
		drv->eps = ep->next;
	if (ep->next)
		ep->next->prev = ep->prev;
	ep->prev = ep->next = NULL;
}

static void ep_forget_attention(struct mrail_drv_ep *ep)
{
	struct mrail_drv_ep **pp = &ep->drv->attention;

	if (!ep->needs_attention)
		return;
	while (*pp && *pp != ep)
		pp = &(*pp)->attention_next;
	if (*pp)
		*pp = ep->attention_next;
	ep->needs_attention = false;
	ep->attention_next = NULL;
}

static void ep_free(struct mrail_drv_ep *ep)
{
	free(ep->head_buf);
	free(ep);
}

void shm_ep_need_attention(struct mrail_drv_ep *ep)
{
	if (ep->needs_attention)
		return;
	ep->needs_attention = true;
	ep->attention_next = ep->drv->attention;
	ep->drv->attention = ep;
}

void shm_ep_release(struct mrail_drv_ep *ep)
{
	struct mrail_drv *drv = ep->drv;

	ep_forget_attention(ep);
	ep_unlink(ep);
	if (drv->progress_depth > 0) {
		ep->next = drv->zombies;
		drv->zombies = ep;
	} else {
		ep_free(ep);
	}
}

void shm_free_zombies(struct mrail_drv *drv)
{
	while (drv->zombies) {
		struct mrail_drv_ep *ep = drv->zombies;
		drv->zombies = ep->next;
		ep_free(ep);
	}
}

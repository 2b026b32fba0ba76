/* Intrusive doubly linked list (circular, with a head node). */
#ifndef MRAIL_UTIL_LIST_H
#define MRAIL_UTIL_LIST_H

#include <stddef.h>

struct mrail_list {
	struct mrail_list *prev, *next;
};

#define MRAIL_LIST_INIT(name) {&(name), &(name)}
#define mrail_container_of(ptr, type, member)                             \
	((type *)((char *)(ptr)-offsetof(type, member)))
#define mrail_list_entry(ptr, type, member) mrail_container_of(ptr, type, member)
#define mrail_list_first(head, type, member)                              \
	mrail_list_entry((head)->next, type, member)
#define mrail_list_foreach_safe(pos, tmp, head)                           \
	for (pos = (head)->next, tmp = pos->next; pos != (head);          \
	     pos = tmp, tmp = pos->next)

static inline void mrail_list_init(struct mrail_list *l)
{
	l->prev = l->next = l;
}

static inline int mrail_list_empty(const struct mrail_list *l)
{
	return l->next == l;
}

static inline void mrail_list_insert_before(struct mrail_list *pos,
					    struct mrail_list *n)
{
	n->prev = pos->prev;
	n->next = pos;
	pos->prev->next = n;
	pos->prev = n;
}

static inline void mrail_list_append(struct mrail_list *head,
				     struct mrail_list *n)
{
	mrail_list_insert_before(head, n);
}

static inline void mrail_list_remove(struct mrail_list *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->prev = n->next = n;
}

#endif

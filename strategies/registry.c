/* The built-in strategies. A new strategy adds one line here. */
#include "strategies/strategy.h"

#include <string.h>

extern const struct mrail_strategy_ops mrail_single_strategy_ops;
extern const struct mrail_strategy_ops mrail_iso_strategy_ops;
extern const struct mrail_strategy_ops mrail_pin_strategy_ops;
extern const struct mrail_strategy_ops mrail_split_strategy_ops;
extern const struct mrail_strategy_ops mrail_bw_strategy_ops;
extern const struct mrail_strategy_ops mrail_greedy_strategy_ops;
extern const struct mrail_strategy_ops mrail_aggreg_strategy_ops;

static const struct mrail_strategy_ops *const strategies[] = {
	&mrail_single_strategy_ops,
	&mrail_iso_strategy_ops,
	&mrail_pin_strategy_ops,
	&mrail_split_strategy_ops,
	&mrail_bw_strategy_ops,
	&mrail_greedy_strategy_ops,
	&mrail_aggreg_strategy_ops,
};

const struct mrail_strategy_ops *mrail_strategy_find(const char *name)
{
	for (size_t i = 0; i < sizeof strategies / sizeof strategies[0]; i++)
		if (!strcmp(strategies[i]->name, name))
			return strategies[i];
	return NULL;
}

/* Built-in strategies whose eager_rail, offered one idle rail and one
 * queued message, always sends it there alone: the engine may skip the
 * views and the call on a gate with a single rail (send.c). */
int mrail_strategy_lone_direct(const struct mrail_strategy_ops *s)
{
	return s == &mrail_split_strategy_ops ||
	       s == &mrail_single_strategy_ops;
}

const char *mrail_strategy_names(void)
{
	return "single, iso, pin, split, bw, greedy, aggreg";
}

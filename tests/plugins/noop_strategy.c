/* A plugin whose ops table lacks an operation: loading it must fail. */
#include <mrail/strategy.h>

__attribute__((visibility("default")))
const struct mrail_strategy_ops mrail_strategy_plugin = {
	.name = "noop",
	.abi_version = MRAIL_STRATEGY_ABI_VERSION,
};

"""The verifiers 0.4 plugin `tradebench-single-stock`: the single-stock benchmark's taskset,
environment and default harness (defined in `tradebench.integrations.verifiers04_env`).

verifiers 0.4 imports a taskset, environment or harness by a top-level module name (the id
with `-` read as `_`), so this package only re-exports them.
"""

from tradebench.integrations.verifiers04_env import (
    SingleStockChatHarness,
    SingleStockEnv,
    SingleStockTaskset,
)

__all__ = ["SingleStockChatHarness", "SingleStockEnv", "SingleStockTaskset"]

"""`run_python`: run untrusted Python confined, with every layer that took effect on record.

The guarantees, the layers that give them and their limits are in docs/mcq.md
("The code sandbox"); `run.py` is the parent side, `child.py` the confined start-up.
"""

from tradebench.sandbox.run import (
    REQUIRED_LAYERS,
    SandboxLimits,
    SandboxResult,
    landlock_abi,
    run_python,
    sandbox_preflight,
)

__all__ = [
    "REQUIRED_LAYERS",
    "SandboxLimits",
    "SandboxResult",
    "landlock_abi",
    "run_python",
    "sandbox_preflight",
]

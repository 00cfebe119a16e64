"""Fork safety of the OpenMP-backed models (LightGBM, scikit-learn's histogram boosting).

GNU OpenMP hangs or crashes in a child process forked after its parent ran a parallel
region (LightGBM FAQ, "LightGBM hangs when multithreading (OpenMP) and using forking in
Linux at the same time"). The run executor forks its worker pool, so a session that
trained or loaded a model and then runs a spec would deadlock. A child forked after this
process used OpenMP therefore runs every OpenMP library single-threaded; a process that
never forked (or forked first) keeps all threads.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

__all__ = ["openmp_guard"]


@dataclass
class _OpenMPState:
    """Process-wide facts about the OpenMP runtime (not configuration)."""

    used: bool = False
    """This process ran an OpenMP-backed model call."""
    inherited: bool = False
    """This process was forked from one that had used OpenMP."""
    limited: bool = False
    """OpenMP libraries are limited to one thread in this process."""


_STATE = _OpenMPState()


def _after_fork_in_child() -> None:
    _STATE.inherited = _STATE.used
    _STATE.limited = False


os.register_at_fork(after_in_child=_after_fork_in_child)


def openmp_guard() -> None:
    """Call before any OpenMP-backed model call (training, prediction, loading)."""
    if _STATE.inherited and not _STATE.limited:
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=1, user_api="openmp")
        _STATE.limited = True
    _STATE.used = True

"""One exception hierarchy for the whole project.

Every message says what went wrong *and* what to do about it. The CLI prints these
without a traceback and exits non-zero; anything that is not a `TradebenchError` is a
bug and keeps its traceback.
"""

from __future__ import annotations


class TradebenchError(Exception):
    """Base class of every error tradebench raises on purpose."""


class ConfigError(TradebenchError):
    """A run spec, CLI option or model configuration is invalid."""


class MandateError(ConfigError):
    """A risk mandate cannot be compiled, or its constraints admit no portfolio.

    The message names the sentence that could not be read (or the constraints that
    contradict each other) and the accepted phrasing (docs/risk.md).
    """


class DataError(TradebenchError):
    """Input data is malformed: missing columns, NaN prices, duplicates, bad dates."""


class DatasetCorruptError(DataError):
    """A dataset file on disk is unreadable, truncated or fails its checksum."""


class ProviderError(TradebenchError):
    """A model provider failed after every retry (HTTP faults, timeouts, bad bodies)."""


class BudgetExceeded(TradebenchError):
    """A token or cost cap was reached; the run stopped cleanly with its state saved."""


class CacheMiss(TradebenchError):
    """Replay mode found no cached reply for a request."""


class ToolError(TradebenchError):
    """An error the *model* should see (bad tool arguments, unknown symbol).

    Unlike other errors it does not fail the run: the agent loop returns its message to
    the model as the tool result. Its text must already be masked.
    """


class SandboxUnavailable(TradebenchError):
    """This machine cannot confine model-written code with every layer the sandbox needs.

    Raised before any untrusted code runs; the message names the missing layers and how
    to opt in to a weaker sandbox.
    """

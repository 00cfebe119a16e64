"""backtrader, or a clear error naming the extra that installs it."""

from __future__ import annotations

from tradebench.errors import ConfigError

try:
    import backtrader
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ConfigError(
        "the MCQ benchmark runs real backtrader backtests: pip install 'tradebench[mcq]'"
    ) from exc

__all__ = ["backtrader"]

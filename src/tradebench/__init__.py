"""tradebench: an honest evaluation harness for LLM trading agents.

An agent only ever sees the market through a point-in-time gate and a mask, and only
ever acts through a broker. Every benchmark is the same loop with different
observations, tools and scoring.
"""

from tradebench.errors import TradebenchError

__version__ = "0.1.0"

__all__ = ["TradebenchError", "__version__"]

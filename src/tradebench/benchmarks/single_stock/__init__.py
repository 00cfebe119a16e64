"""Single-stock persona benchmark: one symbol over a window, traded under a persona.

Each decision day (at the close) the agent sees the last 7 bars, 3-day momentum, 5- and
20-day returns, its position, cumulative return and last 5 decisions, and answers buy
(+1), sell (-1) or hold. Position p_i earns p_i * ln(P[i+1]/P[i]). Scores: cumulative
return, Sharpe, volatility, max drawdown, discipline, mapped to a composite in [0, 1].
See `docs/single_stock.md`.

Modules: `config` (options, tasks), `personas`, `prompt_files` (versioned, hashed `prompts/`),
`observation` (through `MarketView`), `ledger` and `scoring` (pure), `series` and `store`
(stored series, re-scoring), `agents` (protocol, baselines), `llm_agent`, `episode`
(the stepper), `checkpoint`, `executor` (`tradebench run`).
"""

from tradebench.benchmarks.single_stock.config import (
    DEFAULT_EPISODE_LENGTH,
    DEFAULT_SYMBOLS,
    DEFAULT_WINDOW,
    PERSONAS,
    Persona,
    SingleStockOptions,
    Task,
    expand_tasks,
)
from tradebench.benchmarks.single_stock.ledger import ACTIONS, Ledger, settle
from tradebench.benchmarks.single_stock.personas import active_stance
from tradebench.benchmarks.single_stock.scoring import (
    Components,
    PathMetrics,
    SingleStockScores,
    map_components,
    score_episode,
)

__all__ = [
    "ACTIONS",
    "DEFAULT_EPISODE_LENGTH",
    "DEFAULT_SYMBOLS",
    "DEFAULT_WINDOW",
    "PERSONAS",
    "Components",
    "Ledger",
    "PathMetrics",
    "Persona",
    "SingleStockOptions",
    "SingleStockScores",
    "Task",
    "active_stance",
    "expand_tasks",
    "map_components",
    "score_episode",
    "settle",
]

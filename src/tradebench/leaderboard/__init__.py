"""A leaderboard across run folders (`tradebench leaderboard`): one row per agent identity
and cell with intervals over seeds and over days, paired comparisons with Holm-adjusted
p-values and the ranks they allow, the probabilistic and deflated Sharpe ratios, the memory
gap, the knowledge-cutoff split and MCQ accuracy beside its baselines (McNemar between
models). The statistics are `tradebench.inference`'s (docs/statistics.md).

It reads what benchmarks wrote (run folders, MCQ evaluation folders), so it sits above
`benchmarks/`, `report/` and `inference/`, whose page helpers and methods it uses.
"""

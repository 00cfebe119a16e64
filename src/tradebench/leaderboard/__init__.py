"""A leaderboard across run folders (`tradebench leaderboard`): seed means with intervals,
paired differences against equal weight and the index, tie-aware ranks, the knowledge-cutoff
split and MCQ accuracy beside its baselines.

It reads what benchmarks wrote (run folders, MCQ evaluation summaries), so it sits above
`benchmarks/` and `report/`, whose page helpers it uses.
"""

"""Building questions: backtrader strategies and backtests, the 33 templates, options and
distractors, sampling modes, and `build_file` (bars in, JSONL out). Needs the `mcq` extra."""

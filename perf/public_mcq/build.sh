#!/usr/bin/env bash
# The public builder as a user runs it: one question per template for each of the five
# strategies (AAPL 2020-2024, seed 42), joined into OUT/public.jsonl.
# Needs PUBLIC_MCQ (the checkout's Backtrader_MCQ folder) and BARS_CSV (bars_csv.py).
set -euo pipefail
out="$1"
here="$(cd "$(dirname "$0")" && pwd)"
cd "$PUBLIC_MCQ"
strategies="sma_crossover rolling_window_mean exponential_weighted_moving_average rsi_strategy macd_crossover"
for s in $strategies; do
    PYTHONPATH="$here" python backtrader_MCQ_builder.py --symbol AAPL --start-date 2020-01-01 \
        --end-date 2024-01-01 --strategy "$s" --all-templates --seed 42 -o "$out/$s.jsonl" >/dev/null
done
for s in $strategies; do cat "$out/$s.jsonl"; done > "$out/public.jsonl"

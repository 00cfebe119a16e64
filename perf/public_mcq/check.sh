#!/usr/bin/env bash
# The public checker on what build.sh wrote (fails unless every answer verifies).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$PUBLIC_MCQ"
PYTHONPATH="$here" python backtrader_MCQ_checker.py "$1/public.jsonl" >"$1/public-check.txt"
grep -q "All ground-truth answers verified" "$1/public-check.txt"

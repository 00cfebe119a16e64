"""Per model episode: submission attempts, rejections with the feedback the model was given,
fallbacks, HTTP retries and a deterministic sample of its stated reasons.

Counts come from `steps.parquet` (`retries`, `fallback`, `parse_failures`, `http_retries`,
`retry_wait_s`) and `orders.parquet` (broker reject codes); rejections and reasons come
from the masked `trace.jsonl`, the conversation exactly as the model saw it. Nothing here
reads a real identifier or date: an episode is named by agent, mode, mask, seed and window
number (never its id, which holds the window's dates), steps by their number.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from tradebench.report.load import RunData

FEEDBACK_CHARS = 600
"""Feedback longer than this is cut (with an ellipsis) in the report."""
CODE_RE = re.compile(r"orders/\d+: \[([A-Z][A-Z0-9_]*)\]")
"""A coded problem in a submission check's feedback (`orders/<i>: [CODE] text`)."""
REJECTION_COLUMNS = ["step", "attempt", "kind", "codes", "feedback"]
"""Columns of `submission_rejections`."""
REASON_COLUMNS = ["step", "overall_reason", "orders"]
"""Columns of `stated_reasons`."""
COUNT_COLUMNS = (
    "steps",
    "attempts",
    "rejected attempts",
    "fallbacks",
    "unreadable replies",
    "HTTP retries",
    "orders",
    "broker-rejected orders",
)
"""Integer columns of `reliability_row` (null where not recorded)."""

__all__ = [
    "COUNT_COLUMNS",
    "REASON_COLUMNS",
    "REJECTION_COLUMNS",
    "code_counts",
    "episode_label",
    "evenly_spaced",
    "model_episodes",
    "reliability_row",
    "stated_reasons",
    "submission_rejections",
]


def model_episodes(run: RunData) -> pd.DataFrame:
    """Finished model episodes in display order (agent, mode, mask, seed, window, id),
    with a 1-based `window` number and a unique `label` (`episode_label`, numbered
    ` · #k` where several share one)."""
    done = run.done()
    done = done[(done["kind"] == "llm") & done["episode_id"].isin(list(run.steps))]
    windows = run.summary[["window_start", "window_end"]].drop_duplicates()
    keys = sorted(windows.itertuples(index=False, name=None), key=lambda w: (str(w[0]), str(w[1])))
    number = {w: i for i, w in enumerate(keys, start=1)}
    out = done.assign(
        window=[number[w] for w in done[["window_start", "window_end"]].itertuples(index=False)]
    )
    out = out.assign(
        label=[
            episode_label(r.agent, r.mode, r.mask, r.seed, r.window, len(keys))
            for r in out.itertuples(index=False)
        ]
    )
    order = ["agent", "mode", "mask", "seed", "window", "episode_id"]
    out = out.sort_values(order, kind="stable").reset_index(drop=True)
    return out.assign(label=_numbered(list(out["label"])))


def _numbered(labels: list[str]) -> list[str]:
    """Labels made unique with ` · #k` where several episodes share one (a benchmark's
    own cells, such as single-stock tasks, whose names may hold real tickers)."""
    counts = Counter(labels)
    seen: Counter[str] = Counter()
    out = []
    for label in labels:
        seen[label] += 1
        out.append(f"{label} · #{seen[label]}" if counts[label] > 1 else label)
    return out


def episode_label(agent: str, mode: str, mask: str, seed: Any, window: int, windows: int) -> str:
    """`agent · mode · mask · seed N` (plus `· window K` when the run has several): no id,
    so no real date."""
    parts = [str(agent), str(mode), str(mask), f"seed {seed}"]
    if windows > 1:
        parts.append(f"window {window}")
    return " · ".join(parts)


def _cut(text: str, limit: int = FEEDBACK_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _parses(raw: str) -> bool:
    try:
        json.loads(raw)
    except (TypeError, ValueError):
        return False
    return True


def _feedback_issues(feedback: str) -> bool:
    """Whether a tool-error payload lists schema issues."""
    try:
        payload = json.loads(feedback)
    except ValueError:
        return False
    error = payload.get("error") if isinstance(payload, dict) else None
    return bool(isinstance(error, dict) and error.get("issues"))


def _codes(kind: str, feedback: str, raw_arguments: str | None) -> str:
    """The rejection's codes: the checks' coded problems, else what kind of failure it was
    (`MALFORMED_JSON`, `SCHEMA`, or the loop's kind in capitals)."""
    found = list(dict.fromkeys(CODE_RE.findall(feedback)))
    if found:
        return ", ".join(found)
    if kind == "rejected" and raw_arguments is not None and not _parses(raw_arguments):
        return "MALFORMED_JSON"
    if kind == "rejected" and _feedback_issues(feedback):
        return "SCHEMA"
    return kind.upper()


def _submit_names(step: dict[str, Any]) -> set[str]:
    """The submit tool's name: what the submission phase forces, and any call the loop
    rejected as a submission."""
    names = {
        str(c.get("tool_choice"))
        for c in step.get("model_calls") or []
        if c.get("phase") == "submit" and c.get("tool_choice")
    }
    return names | {
        str(c.get("name"))
        for c in step.get("tool_calls") or []
        if c.get("error_kind") == "rejected"
    }


def _no_submission_feedback(messages: Sequence[dict[str, Any]]) -> list[str]:
    """The `no_submission` complaints sent to the model, in order."""
    out = []
    for m in messages:
        content = m.get("content")
        if (
            m.get("role") != "user"
            or not isinstance(content, str)
            or "no_submission" not in content
        ):
            continue
        try:
            payload = json.loads(content)
        except ValueError:
            continue
        error = payload.get("error") if isinstance(payload, dict) else None
        if isinstance(error, dict) and error.get("type") == "no_submission":
            out.append(content)
    return out


@dataclass(frozen=True)
class _Attempt:
    """One submission attempt of a step."""

    model_call: int
    """Index of the model call that made it (the order of attempts)."""
    accepted: bool
    kind: str
    """`accepted`, or why not: the loop's `rejected`, `wrong_tool`, `no_submission`."""
    feedback: str
    """What the model was sent back (the tool message or the complaint)."""
    raw_arguments: str | None = None


def _step_attempts(step: dict[str, Any]) -> list[_Attempt]:
    """Every submission attempt of one step, in the order they happened."""
    messages = step.get("messages") or []
    replies = {
        m.get("tool_call_id"): m.get("content") or "" for m in messages if m.get("role") == "tool"
    }
    submit = _submit_names(step)
    attempts: list[_Attempt] = []
    by_call: dict[int, list[dict[str, Any]]] = {}
    for call in step.get("tool_calls") or []:
        by_call.setdefault(int(call.get("model_call", -1)), []).append(call)
    for index, calls in by_call.items():
        submits = [
            c
            for c in calls
            if c.get("name") in submit and c.get("error_kind") != "after_submission"
        ]
        for c in submits:
            feedback = str(replies.get(c.get("id"), c.get("error") or ""))
            kind = "accepted" if c.get("valid") else str(c.get("error_kind") or "rejected")
            raw = c.get("raw_arguments")
            attempts.append(_Attempt(index, bool(c.get("valid")), kind, feedback, raw))
        wrong = [c for c in calls if c.get("error_kind") == "wrong_tool"]
        if not submits and wrong and all(c.get("phase") == "submit" for c in calls):
            feedback = "\n".join(str(replies.get(c.get("id"), c.get("error") or "")) for c in wrong)
            attempts.append(_Attempt(index, False, "wrong_tool", feedback))
    silent = [
        int(c.get("index", -1))
        for c in step.get("model_calls") or []
        if c.get("phase") == "submit" and not c.get("tool_calls")
    ]
    for index, feedback in zip(silent, _no_submission_feedback(messages), strict=False):
        attempts.append(_Attempt(index, False, "no_submission", feedback))
    return sorted(attempts, key=lambda a: a.model_call)


def submission_rejections(trace: Iterable[dict[str, Any]]) -> pd.DataFrame:
    """Every failed submission attempt of an episode, in order, with the feedback the
    model was given (the tool message, or the complaint when it sent no submission).

    Columns: step (1-based), attempt (1-based within the step), kind (the loop's
    `rejected`, `wrong_tool` or `no_submission`), codes (the checks' coded problems, else
    `MALFORMED_JSON`, `SCHEMA` or the kind), feedback (masked, as sent, cut to
    `FEEDBACK_CHARS`).
    """
    rows = []
    for step in trace:
        for k, a in enumerate(_step_attempts(step), start=1):
            if not a.accepted:
                codes = _codes(a.kind, a.feedback, a.raw_arguments)
                rows.append((int(step.get("step", 0)) + 1, k, a.kind, codes, _cut(a.feedback)))
    return pd.DataFrame(rows, columns=REJECTION_COLUMNS)


def code_counts(rejections: pd.DataFrame) -> str:
    """`CODE × n, ...`, most frequent first (ties by name); empty without rejections."""
    counts = Counter(c.strip() for codes in rejections["codes"] for c in str(codes).split(","))
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return ", ".join(f"{code} × {n}" for code, n in ranked)


def evenly_spaced(n: int, k: int) -> list[int]:
    """Up to `k` indices of `range(n)`: the first, the last and evenly between."""
    if n <= 0 or k <= 0:
        return []
    m = min(k, n)
    if m == 1:
        return [0]
    return [round(i * (n - 1) / (m - 1)) for i in range(m)]


def _order_line(order: dict[str, Any]) -> str:
    size = (
        f"{order['shares']} shares"
        if order.get("shares") is not None
        else f"weight {order.get('target_weight')}"
    )
    head = f"{order.get('side', '?')} {order.get('stock_id', '?')} ({size}, confidence "
    return f"{head}{order.get('confidence')}): {order.get('reason', '')}"


def stated_reasons(trace: Iterable[dict[str, Any]], k: int = 3) -> pd.DataFrame:
    """The model's stated reasons on up to `k` steps with an accepted submission, chosen
    evenly spaced (first and last included): the overall reason and each order's side,
    identifier as sent (masked), size, confidence and reason.

    Columns: step (1-based), overall_reason, orders (one line per order).
    """
    submitted = [s for s in trace if isinstance(s.get("submitted"), dict)]
    rows = []
    for i in evenly_spaced(len(submitted), k):
        step = submitted[i]
        sent = step["submitted"]
        orders = [o for o in sent.get("orders") or [] if isinstance(o, dict)]
        lines = "\n".join(_order_line(o) for o in orders) or "(no orders)"
        rows.append((int(step.get("step", 0)) + 1, str(sent.get("overall_reason", "")), lines))
    return pd.DataFrame(rows, columns=REASON_COLUMNS)


def _sum(steps: pd.DataFrame, column: str) -> float:
    values = pd.to_numeric(steps[column], errors="coerce") if column in steps else None
    return float(values.sum(min_count=1)) if values is not None else np.nan


def _count(value: float) -> int | None:
    """A finite total as an int, None where undefined (not recorded)."""
    return round(value) if np.isfinite(value) else None


def _attempts(steps: pd.DataFrame) -> float:
    """Submission attempts: the `attempts` column where written, else `retries` + 1 per
    decision step (the broker engine: attempts after the first, so at least one)."""
    attempts = _sum(steps, "attempts")
    if np.isfinite(attempts):
        return attempts
    retries = pd.to_numeric(steps["retries"], errors="coerce").dropna()
    return float((retries + 1).sum()) if len(retries) else np.nan


def reliability_row(
    steps: pd.DataFrame,
    orders: pd.DataFrame,
    rejections: pd.DataFrame | None,
) -> dict[str, Any]:
    """One model episode's reliability counts: decision steps, submission attempts,
    rejected attempts (from the trace; without one, attempts minus accepted steps),
    fallbacks and their step numbers, unreadable replies, HTTP retries and backoff, broker
    orders and rejections, and the codes of both kinds of rejection."""
    recorded = steps["fallback"].notna().any()
    fallback = steps["fallback"].astype("boolean").fillna(False).to_numpy(dtype=bool)
    attempts = _attempts(steps)
    if rejections is not None:
        rejected: float = float(len(rejections))
    elif np.isfinite(attempts):
        rejected = attempts - (len(steps) - int(fallback.sum()))
    else:
        rejected = np.nan
    status = orders["status"].astype(str)
    broker = orders.loc[orders["reject_code"].notna(), "reject_code"].astype(str)
    ranked = sorted(Counter(broker).items(), key=lambda kv: (-kv[1], kv[0]))
    return {
        "steps": len(steps),
        "attempts": _count(attempts),
        "rejected attempts": _count(rejected),
        "fallbacks": int(fallback.sum()) if recorded else None,
        "fallback steps": ", ".join(str(i + 1) for i in np.flatnonzero(fallback)) or "–",
        "unreadable replies": _count(_sum(steps, "parse_failures")),
        "HTTP retries": _count(_sum(steps, "http_retries")),
        "backoff s": _sum(steps, "retry_wait_s"),
        "orders": len(orders),
        "broker-rejected orders": int((status == "rejected").sum()),
        "submission codes": (code_counts(rejections) if rejections is not None else "") or "–",
        "broker codes": ", ".join(f"{c} × {n}" for c, n in ranked) or "–",
    }

"""Schema issues as the model reads them: the field, the rule, what is allowed; never the
value the model sent (behind a mask a quoted value comes back as its alias or day label)."""

from __future__ import annotations

import json

from jsonschema import Draft202012Validator

from tradebench.agents.tools import schema_issues

SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["side", "reason", "orders", "missing_one"],
    "properties": {
        "side": {"enum": ["BUY", "SELL"]},
        "reason": {"type": "string", "minLength": 20, "maxLength": 40},
        "code": {"type": "string", "pattern": "^asset_[0-9]{4}$"},
        "weight": {"type": "number", "minimum": 0, "maximum": 1},
        "count": {"type": "integer"},
        "orders": {"type": "array", "maxItems": 1, "items": {"anyOf": [{"type": "integer"}]}},
        "missing_one": {"const": "x"},
    },
}
MARKERS = ("SH600519", "2024-03-18", "600519.SH", "20240318")


def test_no_issue_quotes_the_value_sent() -> None:
    sent = {
        "side": MARKERS[0],
        "reason": MARKERS[1],
        "code": MARKERS[2],
        "count": MARKERS[0],
        "orders": [MARKERS[1], MARKERS[2]],
        MARKERS[3]: 1,
    }
    validator = Draft202012Validator(SCHEMA)
    issues = schema_issues(validator, sent) + schema_issues(validator, {"side": MARKERS[0]})
    text = json.dumps(issues)
    assert not any(m in text for m in MARKERS), text
    by_path = {i["path"]: i["message"] for i in issues}
    assert by_path["side"] == 'must be one of ["BUY", "SELL"]'
    assert by_path["reason"] == "must have at least 20 characters"
    assert by_path["code"] == "must match the pattern ^asset_[0-9]{4}$"
    assert len(issues) == 8 + 2  # the first call stops at MAX_ISSUES (8), no repeats
    assert by_path["count"] == "must be of type integer"
    assert by_path["orders"] == "must have at most 1 items"
    messages = [i["message"] for i in issues if i["path"] == "(root)"]
    assert "missing required property ['missing_one']" in messages
    assert any(m.startswith("has a property the schema does not allow") for m in messages)


def test_an_attack_and_a_neutral_value_read_the_same() -> None:
    validator = Draft202012Validator(SCHEMA)
    base = {"reason": "x" * 25, "orders": [], "missing_one": "x"}
    for field in ("side", "reason", "code", "count"):
        attack = schema_issues(validator, {**base, field: "SH600519"})
        neutral = schema_issues(validator, {**base, field: "QQQQQQQQ"})
        assert attack == neutral, field

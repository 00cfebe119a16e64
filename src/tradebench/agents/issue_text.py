"""A JSON Schema violation as the model reads it: built from the schema, never the input.

`jsonschema`'s own messages quote the offending value (`'SH600519' is not one of [...]`).
Behind a mask that quote is an oracle: re-masked, it tells the model the alias of a real
ticker it sent, or the label of a real date; echoed as is, it still carries whatever the
model wrote. So every issue names only the field (its path, which follows the schema's
declared properties and array positions), the rule it breaks and what the schema allows.
"""

from __future__ import annotations

import json
from typing import Any

from jsonschema.exceptions import ValidationError

MAX_LISTED = 12
"""Allowed values listed in one issue before the list is cut."""


def _listed(values: list[Any]) -> str:
    shown = [json.dumps(v, ensure_ascii=False) for v in values[:MAX_LISTED]]
    more = f", ... ({len(values)} in all)" if len(values) > MAX_LISTED else ""
    return "[" + ", ".join(shown) + more + "]"


def _required(error: ValidationError) -> str:
    present = error.instance if isinstance(error.instance, dict) else {}
    missing = [name for name in error.validator_value if name not in present]
    return f"missing required {'property' if len(missing) == 1 else 'properties'} {missing}"


def _additional(error: ValidationError) -> str:
    allowed = sorted((error.schema.get("properties") or {}).keys())
    return f"has a property the schema does not allow; allowed properties: {allowed}"


RULES = {
    "type": lambda e: f"must be of type {e.validator_value}",
    "enum": lambda e: f"must be one of {_listed(list(e.validator_value))}",
    "const": lambda e: f"must be {json.dumps(e.validator_value, ensure_ascii=False)}",
    "minLength": lambda e: f"must have at least {e.validator_value} characters",
    "maxLength": lambda e: f"must have at most {e.validator_value} characters",
    "minItems": lambda e: f"must have at least {e.validator_value} items",
    "maxItems": lambda e: f"must have at most {e.validator_value} items",
    "minimum": lambda e: f"must be at least {e.validator_value}",
    "maximum": lambda e: f"must be at most {e.validator_value}",
    "exclusiveMinimum": lambda e: f"must be greater than {e.validator_value}",
    "exclusiveMaximum": lambda e: f"must be less than {e.validator_value}",
    "pattern": lambda e: f"must match the pattern {e.validator_value}",
    "required": _required,
    "additionalProperties": _additional,
    "anyOf": lambda e: f"matches none of the {len(e.validator_value)} allowed shapes",
    "oneOf": lambda e: f"must match exactly one of the {len(e.validator_value)} allowed shapes",
    "uniqueItems": lambda e: "must not repeat an item",
}
"""Each keyword's rule in words, from the keyword's value in the schema only."""


def rule_text(error: ValidationError) -> str:
    """What `error` breaks, in words: the rule and the values the schema allows."""
    render = RULES.get(str(error.validator))
    return render(error) if render is not None else f"breaks the schema's `{error.validator}`"


def issue_path(error: ValidationError) -> str:
    """Where the issue is: declared property names and array positions, `(root)` at the top."""
    return "/".join(str(p) for p in error.path) or "(root)"

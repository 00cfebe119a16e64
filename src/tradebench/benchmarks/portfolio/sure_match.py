"""A quick look that tells when tool arguments certainly match their JSON Schema.

The full validator (`jsonschema`) walks every keyword of the schema for every argument and
builds each issue's words; for the small, fixed schemas of the research tools most calls
are valid, and a direct look at the JSON types says so in a fraction of the time. The look
knows only the keywords those schemas use and answers True only when the arguments match
for certain (exact JSON types, every bound checked); anything else (an unknown keyword, a
number written as text, a value out of bounds) is False, and the full validator decides and
words the issues as before.
"""

from __future__ import annotations

from typing import Any

KNOWN = frozenset(
    {
        "type",
        "enum",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "minItems",
        "maxItems",
        "minimum",
        "maximum",
        "minLength",
        "maxLength",
    }
)
"""The keywords the look understands; a schema with any other is left to the validator."""


def surely_matches(schema: dict[str, Any], value: Any) -> bool:
    """True when `value` certainly matches `schema`; False: ask the full validator."""
    if not KNOWN.issuperset(schema):
        return False
    if "enum" in schema and not _in_enum(schema["enum"], value):
        return False
    kind = schema.get("type")
    if kind is None:
        return "enum" in schema and set(schema) == {"enum"}
    check = _CHECKS.get(kind)
    return check is not None and check(schema, value)


def _in_enum(options: list[Any], value: Any) -> bool:
    """A string among string options (other enums are left to the validator)."""
    return type(value) is str and all(type(o) is str for o in options) and value in options


def _object(schema: dict[str, Any], value: Any) -> bool:
    if type(value) is not dict or schema.get("additionalProperties", True) is not False:
        return False
    properties = schema.get("properties", {})
    if any(name not in value for name in schema.get("required", ())):
        return False
    return all(
        type(k) is str and k in properties and surely_matches(properties[k], v)
        for k, v in value.items()
    )


def _array(schema: dict[str, Any], value: Any) -> bool:
    if type(value) is not list or not _bounded(schema, len(value), "minItems", "maxItems"):
        return False
    items = schema.get("items")
    return all(surely_matches(items, v) for v in value) if items is not None else False


def _string(schema: dict[str, Any], value: Any) -> bool:
    return type(value) is str and _bounded(schema, len(value), "minLength", "maxLength")


def _integer(schema: dict[str, Any], value: Any) -> bool:
    return type(value) is int and _bounded(schema, value, "minimum", "maximum")


def _number(schema: dict[str, Any], value: Any) -> bool:
    return type(value) in (int, float) and _bounded(schema, value, "minimum", "maximum")


def _boolean(schema: dict[str, Any], value: Any) -> bool:
    return type(value) is bool


def _bounded(schema: dict[str, Any], x: float, low: str, high: str) -> bool:
    """`x` within the schema's `low` and `high` keywords where given (NaN is not)."""
    return (low not in schema or x >= schema[low]) and (high not in schema or x <= schema[high])


_CHECKS = {
    "object": _object,
    "array": _array,
    "string": _string,
    "integer": _integer,
    "number": _number,
    "boolean": _boolean,
}

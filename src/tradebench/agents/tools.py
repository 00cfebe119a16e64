"""Plain tools for the LLM tool loop: a `ToolSpec` plus a Python callable.

Tools stay plain so benchmarks can wrap them (mask outgoing payloads, unmask incoming
arguments) without the loop knowing. A tool raises `ToolError` (or its `ArgumentError`
child, which carries structured issues) for anything the model should see and fix; any
other exception is a bug and fails the run.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from functools import lru_cache
from typing import Any, TypeVar

from jsonschema import Draft202012Validator
from pydantic import BaseModel, ConfigDict, PrivateAttr, ValidationError

from tradebench.agents.issue_text import issue_path, rule_text
from tradebench.errors import ToolError
from tradebench.llm.types import ToolSpec

MAX_ISSUES = 8
M = TypeVar("M", bound=BaseModel)


class ArgumentError(ToolError):
    """Tool arguments failed validation; `issues` lists each problem for the model."""

    def __init__(self, message: str, issues: list[dict[str, Any]] | None = None) -> None:
        """Keep `message` and the structured `issues` (`{"path", "message"}` dicts)."""
        super().__init__(message)
        self.issues = list(issues or [])


def schema_issues(validator: Draft202012Validator, arguments: dict[str, Any]) -> list[dict]:
    """Up to `MAX_ISSUES` JSON Schema violations as `{"path", "message"}` dicts, each message
    built from the schema alone (`issue_text`: the rule and what it allows, never the value
    the model wrote)."""
    issues: list[dict] = []
    for error in sorted(validator.iter_errors(arguments), key=lambda e: list(e.path)):
        issue = {"path": issue_path(error), "message": rule_text(error)[:300]}
        if issue not in issues:  # one `required` error per missing name, one text for all
            issues.append(issue)
        if len(issues) == MAX_ISSUES:
            break
    return issues


class _SchemaTool(BaseModel):
    """A tool spec with its argument schema compiled once."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    spec: ToolSpec
    """Name, description and argument schema shown to the model."""
    _validator: Draft202012Validator = PrivateAttr()

    def model_post_init(self, _context: Any) -> None:
        """Compile the argument schema once."""
        self._validator = Draft202012Validator(self.checked_schema())

    def checked_schema(self) -> dict[str, Any]:
        """The schema arguments are checked against (the one shown)."""
        return self.spec.parameters

    @property
    def name(self) -> str:
        """The tool's name."""
        return self.spec.name

    def _check(self, arguments: dict[str, Any], subject: str) -> None:
        issues = schema_issues(self._validator, arguments)
        if issues:
            raise ArgumentError(f"{subject} the {self.name} schema", issues)


class Tool(_SchemaTool):
    """A read-only tool: `fn(arguments) -> JSON-able result` (or an awaitable of one)."""

    fn: Callable[[dict[str, Any]], Any]
    """Runs the tool on schema-valid arguments; raises `ToolError` for model errors."""

    def check(self, arguments: dict[str, Any]) -> None:
        """Validate arguments against the schema.

        Raises:
            ArgumentError: With one issue per violation.
        """
        self._check(arguments, "arguments do not match")

    async def run(self, arguments: dict[str, Any]) -> Any:
        """Validate, then call `fn` (awaiting it if it is async)."""
        self.check(arguments)
        result = self.fn(arguments)
        return await result if inspect.isawaitable(result) else result


class SubmitTool(_SchemaTool):
    """The submission tool: schema check, then `validate(arguments) -> action`."""

    validate_fn: Callable[[dict[str, Any]], Any]
    """Returns the validated action, or raises `ToolError` with feedback for the model."""
    accepts: dict[str, Any] | None = None
    """The schema `accept` checks before `validate_fn`; None: the one shown. A tool may
    show a tighter schema than it accepts (an `enum` of the legal ids, bounds a grammar can
    enforce) and refuse the difference itself, with its own codes; `{}` leaves every check
    to `validate_fn`."""

    def checked_schema(self) -> dict[str, Any]:
        """`accepts`, or the schema shown."""
        return self.spec.parameters if self.accepts is None else self.accepts

    def accept(self, arguments: dict[str, Any]) -> Any:
        """The validated action for `arguments`.

        Raises:
            ToolError: Schema or constraint violation (an `ArgumentError` for the schema).
        """
        self._check(arguments, "submission does not match")
        return self.validate_fn(arguments)

    @classmethod
    def from_model(
        cls,
        name: str,
        description: str,
        model: type[BaseModel],
        check: Callable[[Any], Any] | None = None,
    ) -> SubmitTool:
        """A submit tool whose schema and validation come from a pydantic model.

        Args:
            name: Tool name.
            description: What submitting means, shown to the model.
            model: Pydantic model of the action; bound its strings and lists
                (`max_length`) so grammar-forced output fits in `max_tokens`.
            check: Optional constraint check on the parsed action; returns the action to
                keep (possibly the same) or raises `ToolError`.
        """

        def validate(arguments: dict[str, Any]) -> Any:
            action = parse_model(model, arguments)
            return check(action) if check is not None else action

        spec = ToolSpec(name=name, description=description, parameters=model_schema(model))
        return cls(spec=spec, validate_fn=validate)


def parse_model(model: type[M], arguments: dict[str, Any]) -> M:
    """`arguments` as a `model` instance.

    Raises:
        ArgumentError: One issue per pydantic error (up to `MAX_ISSUES`).
    """
    try:
        return model.model_validate(arguments)
    except ValidationError as exc:
        issues = [
            {"path": "/".join(str(p) for p in e["loc"]) or "(root)", "message": e["msg"]}
            for e in exc.errors()[:MAX_ISSUES]
        ]
        raise ArgumentError(f"submission is not a valid {model.__name__}", issues) from None


@lru_cache(maxsize=64)
def model_schema(model: type[BaseModel]) -> dict[str, Any]:
    """A pydantic model's JSON Schema, generated once per model (generation is slow and
    submit tools are rebuilt every step)."""
    return model.model_json_schema()

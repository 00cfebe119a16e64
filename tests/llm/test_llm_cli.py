"""`tradebench llm ping` and `serve-local` through typer's CliRunner, against loopback."""

from __future__ import annotations

from typer.testing import CliRunner

from tradebench.cli.llm import app
from tradebench.llm.loopback import Reply

runner = CliRunner()


def test_ping_reports_a_valid_tool_call(loopback):
    result = runner.invoke(app, ["ping", "openai:test-model", "--base-url", loopback.openai_url])
    assert result.exit_code == 0, result.output
    assert "latency" in result.output and "valid tool call: yes" in result.output
    body = loopback.requests[0].body
    assert body["tool_choice"] == {"type": "function", "function": {"name": "echo"}}
    assert body["tools"][0]["function"]["parameters"]["properties"]["message"]["maxLength"] == 16


def test_ping_anthropic(loopback):
    args = ["ping", "anthropic:test-model", "--base-url", loopback.anthropic_url]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert loopback.requests[0].body["tool_choice"] == {"type": "tool", "name": "echo"}


def test_ping_exits_non_zero_without_a_tool_call(loopback):
    loopback.push(Reply.say("I cannot call tools."))
    result = runner.invoke(app, ["ping", "openai:test-model", "--base-url", loopback.openai_url])
    assert result.exit_code == 1
    assert "valid tool call: no" in result.output and "no tool call came back" in result.output


def test_ping_exits_non_zero_on_schema_invalid_arguments(loopback):
    loopback.push(Reply.tool("echo", {"message": "x" * 40}))
    result = runner.invoke(app, ["ping", "openai:test-model", "--base-url", loopback.openai_url])
    assert result.exit_code == 1 and "too long" in result.output


def test_ping_bad_shorthand_is_a_clean_error():
    result = runner.invoke(app, ["ping", "gpt-4"])
    assert result.exit_code == 1
    assert "provider:model" in result.output and "Traceback" not in result.output


def test_ping_dead_endpoint_is_a_clean_error(loopback):
    url = loopback.openai_url
    loopback.stop()
    result = runner.invoke(app, ["ping", "openai:test-model", "--base-url", url])
    assert result.exit_code == 1 and "gave up after 2 attempts" in result.output


def test_serve_local_help():
    result = runner.invoke(app, ["serve-local", "--help"])
    assert result.exit_code == 0 and "--port" in result.output

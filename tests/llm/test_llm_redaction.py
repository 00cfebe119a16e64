"""No API key or Authorization header in logs, errors, cache rows or loop records."""

from __future__ import annotations

import asyncio
import logging

import pytest

from tradebench.errors import ProviderError
from tradebench.llm.cache import ResponseCache
from tradebench.llm.loopback import Reply
from tradebench.llm.redact import REDACTED, Redactor
from tradebench.llm.types import Message

KEY = "sk-test-SECRET-0123456789abcdef"


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_key_never_reaches_logs_errors_or_cache(
    loopback, make_model, tmp_path, monkeypatch, caplog, provider
):
    monkeypatch.setenv("TB_REDACT_TEST_KEY", KEY)
    echo = f"upstream said: Authorization: Bearer {KEY} / x-api-key={KEY}"
    loopback.push(
        Reply.error(500, body=echo),  # a retried fault whose body echoes the key
        Reply.say(f"my key is {KEY}"),  # a model that leaks it into its text
        Reply.error(401, body=echo),  # a fatal error echoing it
    )
    path = tmp_path / "c.sqlite"
    model = make_model(provider, api_key_env="TB_REDACT_TEST_KEY", cache=ResponseCache(path))
    caplog.set_level(logging.DEBUG)
    reply = asyncio.run(model.generate([Message(role="user", content="hi")]))
    with pytest.raises(ProviderError) as info:
        asyncio.run(model.generate([Message(role="user", content="again")]))
    # the key really went over the wire, so the checks below can fail
    sent = loopback.requests[0].headers
    assert KEY in sent.get("authorization", "") + sent.get("x-api-key", "")
    assert KEY not in caplog.text and REDACTED in caplog.text
    assert KEY not in str(info.value)
    stored = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    assert KEY.encode() not in stored
    # the rows are deflated on disk: scan their decoded text too, where it would show
    rows = "".join(r.request + r.response for r in ResponseCache(path, mode="replay").rows())
    assert KEY not in rows and REDACTED in rows
    # scrubbed at the model boundary, so the live reply is what a replay returns
    assert reply.message.content == f"my key is {REDACTED}"


def test_redactor_patterns_and_env_values():
    redactor = Redactor.from_env(env={"MY_API_KEY": "plain-value-123456", "HOME": "/root"})
    text = (
        "Authorization: Bearer abc.def-ghi_123 x-api-key: zzzzzzzzzzzz "
        "sk-ant-api03-abcdefghijkl plain-value-123456 /root stays"
    )
    out = redactor.text(text)
    for secret in ("abc.def-ghi_123", "zzzzzzzzzzzz", "abcdefghijkl", "plain-value-123456"):
        assert secret not in out
    assert "/root stays" in out
    headers = redactor.headers({"Authorization": "Bearer x", "X-Api-Key": "y", "Accept": "json"})
    assert headers == {"Authorization": REDACTED, "X-Api-Key": REDACTED, "Accept": "json"}


def test_a_secret_exported_or_changed_during_a_run_is_caught(monkeypatch) -> None:
    """A redactor is built from the environment at every step: a key exported or rotated
    after the first step is scrubbed from the next step's records."""
    monkeypatch.setenv("TB_ROTATED_API_KEY", "first-value-0123456")
    assert Redactor.from_env().text("a first-value-0123456 b") == f"a {REDACTED} b"
    monkeypatch.setenv("TB_ROTATED_API_KEY", "second-value-6543210")
    monkeypatch.setenv("TB_LATER_TOKEN", "later-value-9876543")
    out = Redactor.from_env().text("second-value-6543210 later-value-9876543")
    assert out == f"{REDACTED} {REDACTED}"
    monkeypatch.setenv("TB_PLAIN_SETTING", "not-a-secret-123456")  # no secret-like name
    assert "not-a-secret-123456" in Redactor.from_env().text("not-a-secret-123456")

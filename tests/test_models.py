from __future__ import annotations

import asyncio

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from reasoning_graphs.errors import BudgetExceeded, ConfigurationError, ModelError, SchemaError
from reasoning_graphs.models import (
    PROVIDERS,
    ModelClient,
    RetrySettings,
    allow_real_models,
    build_chat_model,
    parse_spec,
    resolve,
)
from reasoning_graphs.testing import ScriptedChatModel

NO_WAIT = RetrySettings(initial_delay=0, jitter=False)


class Answer(BaseModel):
    answer: str
    confidence: int


def client(*replies: object, **kw: object) -> tuple[ScriptedChatModel, ModelClient]:
    fake = ScriptedChatModel(replies=list(replies), **kw)  # type: ignore[arg-type]
    return fake, ModelClient(fake, retry=NO_WAIT)


@pytest.mark.parametrize("spec", ["", "gpt-4o", "openai", ":x", "openai:"])
def test_malformed_specs_fail_before_any_call(spec: str) -> None:
    with pytest.raises(ConfigurationError):
        parse_spec(spec)


def test_unknown_provider_lists_known_ones() -> None:
    with pytest.raises(ConfigurationError) as err:
        build_chat_model("nope:x")
    for name in PROVIDERS:
        assert name in str(err.value)


def test_missing_openai_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with allow_real_models(True), pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
        build_chat_model("openai:gpt-4o-mini")


def test_missing_google_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    with allow_real_models(True), pytest.raises(ConfigurationError, match="GEMINI_API_KEY"):
        build_chat_model("google:gemini-2.5-flash")


def test_real_models_are_forbidden_inside_tests(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with pytest.raises(ConfigurationError, match="forbidden"):
        build_chat_model("openai:gpt-4o-mini")


def test_openai_compatible_base_url_needs_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    with allow_real_models(True):
        model = build_chat_model("openai:local-model")
    assert model.__class__.__name__ == "ChatOpenAI"


def test_plain_call_counts_usage() -> None:
    fake, seam = client("hello")
    reply = seam.call("Say hello")
    assert reply.value == "hello"
    assert reply.usage.calls == 1 and reply.usage.output_tokens > 0 and reply.usage.unknown_usage_calls == 0
    assert reply.model == "fake:scripted"
    assert fake.prompt_texts == ["Say hello"]


def test_unknown_usage_is_counted_as_unknown_not_zero() -> None:
    _, seam = client({"content": "x", "usage": None})
    reply = seam.call("q")
    assert reply.usage.unknown_usage_calls == 1 and reply.usage.tokens == 0


def test_transient_errors_are_retried_then_succeed() -> None:
    fake, seam = client({"raise": "transient"}, {"raise": "transient"}, "ok")
    reply = seam.call("q")
    assert reply.value == "ok"
    assert reply.usage.calls == 3 and reply.usage.failed_calls == 2
    assert fake.calls == 3


def test_retries_are_bounded() -> None:
    _, seam = client(*[{"raise": "transient"}] * 5)
    with pytest.raises(ModelError) as err:
        seam.call("q")
    assert err.value.usage is not None and err.value.usage.calls == 3


def test_auth_errors_fail_at_once() -> None:
    fake, seam = client({"raise": "auth"}, "never")
    with pytest.raises(ModelError, match="401"):
        seam.call("q")
    assert fake.calls == 1


def test_schema_violation_is_repaired_with_the_error_attached() -> None:
    fake, seam = client('{"answer": "7"}', '{"answer": "7", "confidence": 9}')
    reply = seam.call("q", schema=Answer)
    assert reply.value == Answer(answer="7", confidence=9)
    assert reply.usage.schema_repairs == 1 and reply.usage.calls == 2
    repair_prompt = fake.prompt_texts[1]
    assert "confidence" in repair_prompt and "did not match" in repair_prompt


def test_schema_repair_is_bounded() -> None:
    _, seam = client("no", "still no", "nope", "never")
    with pytest.raises(SchemaError) as err:
        seam.call("q", schema=Answer)
    assert err.value.usage is not None and err.value.usage.calls == 3


def test_fenced_json_is_accepted() -> None:
    _, seam = client('```json\n{"answer": "a", "confidence": 1}\n```')
    assert seam.call("q", schema=Answer).value == Answer(answer="a", confidence=1)


def test_call_allowance_is_enforced() -> None:
    _, seam = client("bad", "bad", "bad")
    with pytest.raises(BudgetExceeded) as err:
        seam.call("q", schema=Answer, max_calls=2)
    assert err.value.usage is not None and err.value.usage.calls == 2


def test_async_path_matches_sync_path() -> None:
    _, seam = client('{"answer": "x", "confidence": 3}')
    reply = asyncio.run(seam.acall("q", schema=Answer))
    assert reply.value == Answer(answer="x", confidence=3)


def test_resolve_caches_provider_strings(tmp_path: object) -> None:
    import json
    from pathlib import Path

    script = Path(str(tmp_path)) / "s.json"
    script.write_text(json.dumps(["a", "b"]))
    first = resolve(f"fake:{script}")
    assert resolve(f"fake:{script}") is first
    assert first.call("1").value == "a" and resolve(f"fake:{script}").call("2").value == "b"


@given(st.integers(min_value=1, max_value=10), st.floats(min_value=0, max_value=2))
def test_backoff_is_bounded(retry: int, initial: float) -> None:
    policy = RetrySettings(initial_delay=initial, max_delay=3.0)
    assert 0 <= policy.delay(retry) <= 4.5

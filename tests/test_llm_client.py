"""kgrag.llm over real HTTP against the scripted OpenAI-compatible server (tests/fixtures/llm_server.py)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import threading
import time
from email.utils import formatdate

import pytest
from fixtures.llm_server import Delay, Drop, Error, Reply, ScriptedLLMServer
from pydantic import BaseModel, Field, TypeAdapter

from kgrag.config import Settings
from kgrag.errors import LLMError
from kgrag.llm import (
    AsyncChatClient,
    ChatClient,
    JSONExtractionError,
    LLMHTTPError,
    Usage,
    UsageLedger,
    achat_json,
    chat_json,
    extract_json,
)
from kgrag.llm.client import _retry_after

FAST = {"backoff_base": 0.01, "backoff_max": 0.05, "jitter": 0.1}
HELLO = [{"role": "user", "content": "say hello please"}]  # 3 prompt words


@pytest.fixture
def ledger() -> UsageLedger:
    return UsageLedger("test")


@pytest.fixture
def client(llm_settings: Settings, ledger: UsageLedger):
    with ChatClient.from_settings(llm_settings, ledger=ledger, **FAST) as c:
        yield c


class Keywords(BaseModel):
    high_level: list[str]
    low_level: list[str] = Field(min_length=1)


# -- chat ----------------------------------------------------------------------------------------------------


def test_chat_success_and_usage(client, llm_server, ledger):
    llm_server.script(Reply("hello there friend", finish_reason="stop"))
    result = client.chat(HELLO, max_tokens=20, seed=7)

    assert result.text == "hello there friend"
    assert result.finish_reason == "stop"
    assert result.usage == Usage(prompt_tokens=3, completion_tokens=3, total_tokens=6)
    assert result.model == "scripted-model" and result.attempts == 1
    assert result.raw["object"] == "chat.completion"

    (request,) = llm_server.requests
    assert request.method == "POST" and request.path == "/v1/chat/completions"
    assert request.body == {
        "model": "scripted-model",
        "messages": HELLO,
        "temperature": 0.0,
        "max_tokens": 20,
        "seed": 7,
    }
    snap = ledger.snapshot()
    assert (snap["calls"], snap["failures"], snap["retries"], snap["requests"]) == (1, 0, 0, 1)
    assert (snap["prompt_tokens"], snap["completion_tokens"], snap["total_tokens"]) == (3, 3, 6)
    assert snap["wall_time_s"] > 0


def test_string_message_and_model_override(client, llm_server):
    llm_server.script("ok")
    assert client.chat("just a string", model="other-model", temperature=None).model == "other-model"
    body = llm_server.requests[0].body
    assert body["messages"] == [{"role": "user", "content": "just a string"}]
    assert body["model"] == "other-model" and "temperature" not in body


def test_retry_on_429_honours_retry_after(llm_settings, llm_server, ledger):
    # backoff_base is huge: finishing fast proves the short Retry-After was used instead.
    llm_server.script(Error(429, "slow down", retry_after=0.2), Reply("finally"))
    with ChatClient.from_settings(llm_settings, ledger=ledger, backoff_base=30.0, backoff_max=30.0) as client:
        started = time.perf_counter()
        result = client.chat(HELLO)
    elapsed = time.perf_counter() - started

    assert result.text == "finally" and result.attempts == 2
    assert 0.2 <= elapsed < 5
    first, second = llm_server.requests
    assert second.received_at - first.received_at >= 0.2
    assert ledger.snapshot()["retries"] == 1


@pytest.mark.parametrize("statuses", [(500,), (503,), (500, 502, 503)])
def test_retry_on_5xx(client, llm_server, statuses):
    llm_server.script(*[Error(s, f"upstream {s}") for s in statuses], Reply("recovered"))
    client.max_retries = 3
    result = client.chat(HELLO)
    assert result.text == "recovered" and result.attempts == len(statuses) + 1
    assert len(llm_server.requests) == len(statuses) + 1


def test_gives_up_after_max_retries(client, llm_server, ledger):
    llm_server.script(*[Error(503, f"overloaded #{i}") for i in range(5)])
    with pytest.raises(LLMError) as info:
        client.chat(HELLO)
    message = str(info.value)
    assert client.url in message
    assert "3 attempt(s)" in message  # llm_max_retries=2 → 3 attempts
    assert "HTTP 503" in message and "overloaded #2" in message
    assert len(llm_server.requests) == 3
    assert ledger.snapshot()["failures"] == 1 and ledger.snapshot()["retries"] == 2


def test_connection_refused_raises_after_retries(ledger):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    client = ChatClient(url, "m", api_key="sk-secret-123", max_retries=2, ledger=ledger, **FAST)
    with client, pytest.raises(LLMError) as info:
        client.chat(HELLO)
    message = str(info.value)
    assert f"{url}/chat/completions" in message and "3 attempt(s)" in message
    assert "connection error" in message and "sk-secret-123" not in message
    snap = ledger.snapshot()
    assert (snap["calls"], snap["failures"], snap["retries"]) == (1, 1, 2)


def test_bad_scheme_is_not_retried(ledger):
    with (
        ChatClient("ftp://127.0.0.1:9/v1", "m", ledger=ledger, **FAST) as client,
        pytest.raises(LLMError) as info,
    ):
        client.chat(HELLO)
    assert not isinstance(info.value, LLMHTTPError) and "UnsupportedProtocol" in str(info.value)
    assert ledger.snapshot()["retries"] == 0


def test_timeout_then_retry_succeeds(llm_settings, llm_server):
    llm_server.script(Delay(1.5, then=Reply("too late")), Reply("in time"))
    with ChatClient.from_settings(llm_settings, timeout=0.3, **FAST) as client:
        started = time.perf_counter()
        result = client.chat(HELLO)
    assert result.text == "in time" and result.attempts == 2
    assert time.perf_counter() - started < 1.5
    assert len(llm_server.requests) == 2


def test_dropped_connection_is_retried(client, llm_server):
    llm_server.script(Drop(), Reply("after drop"))
    assert client.chat(HELLO).text == "after drop"
    assert len(llm_server.requests) == 2


def test_400_is_not_retried(client, llm_server, ledger):
    llm_server.script(Error(400, "messages[0].role must be one of system/user/assistant"), Reply("unused"))
    with pytest.raises(LLMHTTPError) as info:
        client.chat(HELLO)
    assert info.value.status_code == 400
    assert "HTTP 400" in str(info.value) and "role must be one of" in str(info.value)
    assert len(llm_server.requests) == 1 and llm_server.remaining == 1
    assert ledger.snapshot()["failures"] == 1 and ledger.snapshot()["retries"] == 0


def test_plain_text_and_detail_error_bodies(client, llm_server):
    llm_server.script(Error(404, body="model not found here"), Error(422, body={"detail": "bad field x"}))
    with pytest.raises(LLMHTTPError, match="model not found here"):
        client.chat(HELLO)
    with pytest.raises(LLMHTTPError, match="bad field x"):
        client.chat(HELLO)


def test_auth_header_sent_and_key_never_leaks(llm_settings, llm_server, caplog):
    caplog.set_level(logging.DEBUG)
    key = llm_settings.llm_api_key
    # A server that echoes the key back in its error must not put it in our messages.
    llm_server.script(Error(500, f"bad key {key}"), Error(401, f"invalid api key {key}"))
    with ChatClient.from_settings(llm_settings, **FAST) as client:
        with pytest.raises(LLMHTTPError) as info:
            client.chat(HELLO)
        assert key not in repr(client)
    assert llm_server.requests[0].headers["authorization"] == f"Bearer {key}"
    assert key not in str(info.value) and "***" in str(info.value)
    assert all(key not in record.getMessage() for record in caplog.records)


def test_no_auth_header_without_key(llm_server):
    llm_server.script("hi")
    with ChatClient(llm_server.base_url, "m") as client:
        client.chat(HELLO)
    assert "authorization" not in llm_server.requests[0].headers


def test_malformed_completion_raises(client, llm_server):
    llm_server.script(lambda body: Error(200, body={"unexpected": True}))
    with pytest.raises(LLMError, match="malformed completion"):
        client.chat(HELLO)


def test_from_settings_and_missing_endpoint(llm_settings, tmp_path):
    client = ChatClient.from_settings(llm_settings)
    assert client.url == f"{llm_settings.llm_base_url}/chat/completions"
    assert client.model == "scripted-model" and client.max_retries == 2
    assert client.timeout.read == 2.0 and client.timeout.connect == 2.0
    client.close()
    with pytest.raises(LLMError, match="KGRAG_LLM_BASE_URL"):
        ChatClient.from_settings(Settings(llm_base_url="", work_dir=tmp_path))


def test_backoff_grows_and_caps():
    client = ChatClient("http://127.0.0.1:9/v1", "m", backoff_base=0.5, backoff_max=3.0, jitter=0.0)
    assert [client.backoff_delay(a) for a in (1, 2, 3, 4, 5)] == [0.5, 1.0, 2.0, 3.0, 3.0]
    assert client.backoff_delay(1, retry_after=0.25) == 0.25
    assert client.backoff_delay(1, retry_after=1e6) == client.retry_after_max
    jittery = ChatClient("http://127.0.0.1:9/v1", "m", backoff_base=1.0, jitter=0.5)
    assert all(1.0 <= jittery.backoff_delay(1) <= 1.5 for _ in range(50))
    client.close()
    jittery.close()


def test_retry_after_parsing():
    assert _retry_after("2") == 2.0 and _retry_after("0.5") == 0.5 and _retry_after(None) is None
    assert _retry_after("soon") is None
    assert 8 <= _retry_after(formatdate(time.time() + 10, usegmt=True)) <= 10
    assert _retry_after(formatdate(time.time() - 10, usegmt=True)) == 0.0


def test_async_client_retries_and_accounts(llm_settings, llm_server, ledger):
    llm_server.script(Error(502, "bad gateway"), Reply("async hello"))

    async def main():
        async with AsyncChatClient.from_settings(llm_settings, ledger=ledger, **FAST) as client:
            return await client.chat(HELLO)

    result = asyncio.run(main())
    assert result.text == "async hello" and result.attempts == 2
    assert ledger.snapshot()["retries"] == 1


# -- ledger --------------------------------------------------------------------------------------------------


def test_ledger_counts_are_exact(client, llm_server, ledger):
    llm_server.script(
        Reply("one two", prompt_tokens=10, completion_tokens=2),
        Error(429, retry_after=0),
        Error(500),
        Reply("three", prompt_tokens=11, completion_tokens=1),
        Error(400, "bad"),
        Reply("four", prompt_tokens=5, completion_tokens=4),
    )
    client.chat(HELLO)
    client.chat(HELLO)
    with pytest.raises(LLMHTTPError):
        client.chat(HELLO)
    client.chat(HELLO, model="model-b")

    snap = ledger.snapshot()
    assert {k: snap[k] for k in ("calls", "failures", "retries", "requests", "invalid_outputs")} == {
        "calls": 4,
        "failures": 1,
        "retries": 2,
        "requests": 6,
        "invalid_outputs": 0,
    }
    assert (snap["prompt_tokens"], snap["completion_tokens"], snap["total_tokens"]) == (26, 7, 33)
    assert set(snap["by_model"]) == {"scripted-model", "model-b"}
    assert snap["by_model"]["scripted-model"]["calls"] == 3
    assert snap["by_model"]["model-b"]["total_tokens"] == 9
    assert len(llm_server.requests) == snap["requests"]


def test_ledger_is_thread_safe(llm_settings, llm_server, ledger):
    llm_server.default = Reply("a b", prompt_tokens=3, completion_tokens=2)
    with ChatClient.from_settings(llm_settings, ledger=ledger) as client:
        threads = [threading.Thread(target=lambda: [client.chat(HELLO) for _ in range(5)]) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert ledger.calls == 40 and ledger.usage == Usage(120, 80, 200)
    ledger.reset()
    assert ledger.snapshot()["calls"] == 0 and ledger.snapshot()["by_model"] == {}


# -- chat_json -----------------------------------------------------------------------------------------------


def test_chat_json_valid_first_time(client, llm_server):
    llm_server.script('Sure!\n```json\n{"high_level": ["films"], "low_level": ["Tom Hanks"]}\n```')
    system = {"role": "system", "content": "You extract keywords."}
    out = chat_json(client, [system, *HELLO], Keywords, json_mode=True)
    assert out == Keywords(high_level=["films"], low_level=["Tom Hanks"])

    (request,) = llm_server.requests
    messages = request.messages
    assert [m["role"] for m in messages] == [
        "system",
        "user",
    ]  # instruction merged into the one system message
    assert messages[0]["content"].startswith("You extract keywords.")
    assert "JSON schema" in messages[0]["content"] and "low_level" in messages[0]["content"]
    assert request.body["response_format"] == {"type": "json_object"}


def test_chat_json_corrects_invalid_json(client, llm_server, ledger):
    bad = "Here you go: high_level = films"
    llm_server.script(bad, '{"high_level": [], "low_level": ["Paris"]}')
    out = chat_json(client, HELLO, Keywords, backoff_base=0.01)
    assert out.low_level == ["Paris"]

    first, second = llm_server.requests
    assert "response_format" not in first.body
    assert second.messages[: len(first.messages)] == first.messages
    assistant, correction = second.messages[-2:]
    assert assistant == {"role": "assistant", "content": bad}
    assert correction["role"] == "user"
    assert "no JSON object or array found" in correction["content"]
    assert "corrected JSON" in correction["content"]
    assert ledger.snapshot()["invalid_outputs"] == 1 and ledger.calls == 2


def test_chat_json_validation_error_in_correction(client, llm_server):
    llm_server.script('{"high_level": ["x"], "low_level": []}', '{"high_level": ["x"], "low_level": ["y"]}')
    assert chat_json(client, HELLO, Keywords, backoff_base=0.01).low_level == ["y"]
    correction = llm_server.requests[1].messages[-1]["content"]
    assert "low_level" in correction and "at least 1 item" in correction
    assert "errors.pydantic.dev" not in correction


def test_chat_json_gives_up(client, llm_server, ledger):
    llm_server.script(*['{"high_level": "not a list"}'] * 4)
    with pytest.raises(LLMError) as info:
        chat_json(client, HELLO, Keywords, max_attempts=3, backoff_base=0.01)
    assert "Keywords" in str(info.value) and "3 attempt(s)" in str(info.value)
    assert "high_level" in str(info.value)
    assert len(llm_server.requests) == 3 and llm_server.remaining == 1
    # corrections do not pile up: each retry is the base conversation + one assistant/user pair
    assert len(llm_server.requests[2].messages) == len(llm_server.requests[1].messages)
    assert ledger.snapshot()["invalid_outputs"] == 3


def test_chat_json_type_adapter_and_json_mode_fallback(client, llm_server):
    llm_server.script(Error(400, "response_format is not supported"), "[1, 2, 3]")
    assert chat_json(client, HELLO, TypeAdapter(list[int]), json_mode=True) == [1, 2, 3]
    first, second = llm_server.requests
    assert "response_format" in first.body and "response_format" not in second.body


def test_chat_json_propagates_transport_errors(client, llm_server):
    llm_server.script(Error(401, "no such key"))
    with pytest.raises(LLMHTTPError, match="no such key"):
        chat_json(client, HELLO, Keywords)


def test_achat_json(llm_settings, llm_server):
    llm_server.script("nope", '{"high_level": ["a"], "low_level": ["b"]}')

    async def main():
        async with AsyncChatClient.from_settings(llm_settings, **FAST) as client:
            return await achat_json(client, HELLO, Keywords, backoff_base=0.01)

    assert asyncio.run(main()).high_level == ["a"]


# -- extract_json --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ("  [1, 2]\n", [1, 2]),
        ('```json\n{"a": [1, {"b": 2}]}\n```', {"a": [1, {"b": 2}]}),
        ('```\n{"a": 1}\n```', {"a": 1}),
        ('Here it is:\n```JSON\n{"a": 1}\n``` Hope that helps!', {"a": 1}),
        (
            'The answer is {"a": {"b": {"c": [1, 2, {"d": null}]}}} as requested.',
            {"a": {"b": {"c": [1, 2, {"d": None}]}}},
        ),
        ('{"text": "a } tricky ] string {", "n": 2} trailing', {"text": "a } tricky ] string {", "n": 2}),
        ('prefix {"q": "say \\"hi\\" [x]"} suffix', {"q": 'say "hi" [x]'}),
        ('[note] then {"a": 1}', {"a": 1}),
        ('{not json} but later {"ok": true}', {"ok": True}),
        ('<think>maybe {"a": 0}?</think>\n{"a": 2}', {"a": 2}),
        ('Options: ["x", "y"] are listed', ["x", "y"]),
        ('{"unicode": "北京 ✓"}', {"unicode": "北京 ✓"}),
    ],
)
def test_extract_json(text, expected):
    assert extract_json(text) == expected


@pytest.mark.parametrize("text", ["", "no json here", "{broken: json", '```json\n{"a": \n```'])
def test_extract_json_none(text):
    with pytest.raises(JSONExtractionError):
        extract_json(text)


# -- the fixture itself --------------------------------------------------------------------------------------


def test_server_models_and_exhausted_script(client, llm_server):
    import httpx

    models = httpx.get(f"{llm_server.base_url}/models", timeout=2).json()
    assert models["data"][0]["id"] == "scripted-model"
    with pytest.raises(LLMError, match="script exhausted"):
        client.chat(HELLO)


def test_server_callable_step_sees_request(client, llm_server):
    llm_server.script(lambda body: f"echo {body['messages'][-1]['content']}")
    assert client.chat(HELLO).text == "echo say hello please"


def test_server_stops_cleanly():
    server = ScriptedLLMServer(default="x").start()
    url = server.base_url
    server.push(Delay(30))  # a sleeping handler must not block stop()
    threading.Thread(target=lambda: _quiet_post(url), daemon=True).start()
    time.sleep(0.1)
    started = time.perf_counter()
    server.stop()
    assert time.perf_counter() - started < 3


def _quiet_post(url: str) -> None:
    import httpx

    with contextlib.suppress(httpx.HTTPError):
        httpx.post(f"{url}/chat/completions", json={"messages": []}, timeout=5)

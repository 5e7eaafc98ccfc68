"""Structured output: ask an LLM for JSON, pull the JSON out of whatever it replied, validate it with pydantic.

    class Keywords(BaseModel):
        high_level: list[str]
        low_level: list[str]

    keywords = chat_json(client, [{"role": "user", "content": prompt}], Keywords)

Models wrap JSON in prose, Markdown fences or ``<think>`` blocks; :func:`extract_json` finds the value anyway.
When a reply is still unusable, :func:`chat_json` shows the model its reply and the validation error and asks
again, a bounded number of times with exponential backoff, then raises :class:`~kgrag.errors.LLMError`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from collections.abc import Callable, Iterator
from typing import Any, Protocol, TypeVar

from pydantic import TypeAdapter, ValidationError

from kgrag.errors import LLMError
from kgrag.llm.client import ChatResult, LLMHTTPError, Message, Messages

log = logging.getLogger(__name__)

T = TypeVar("T")

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"```[ \t]*(?:json5?|javascript|js)?[ \t]*\n?(.*?)```", re.DOTALL | re.IGNORECASE)
_MAX_SCAN_STARTS = 200  # bracket positions tried by the span scan (bounds the work on pathological replies)
_MAX_ERROR_CHARS = 1500


class JSONExtractionError(ValueError):
    """No JSON value could be found in a reply."""


class SupportsChat(Protocol):
    def chat(self, messages: Messages, **kwargs: Any) -> ChatResult: ...


# -- extraction -------------------------------------------------------------------------------------------


def iter_json_values(text: str) -> Iterator[Any]:
    """Every JSON value found in ``text``, most likely first (duplicates possible).

    Order: the whole text; the contents of each Markdown code fence; then, scanning left to right, the
    value starting at each ``{`` or ``[`` (a complete, balanced span: brackets inside strings are handled
    by the JSON decoder, so ``{"a": "]"}`` parses whole).
    """
    text = _THINK.sub("", text).strip()
    decoder = json.JSONDecoder()
    candidates = [text] + [m.group(1).strip() for m in _FENCE.finditer(text)]
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        yield value
    starts = [i for i, ch in enumerate(text) if ch in "{["][:_MAX_SCAN_STARTS]
    for start in starts:
        try:
            value, _end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            continue
        yield value


def extract_json(text: str) -> Any:
    """The most likely JSON value in an LLM reply; raises :class:`JSONExtractionError` if there is none."""
    for value in iter_json_values(text):
        return value
    raise JSONExtractionError(f"no JSON object or array found in the reply: {_clip(text, 200)!r}")


def parse_reply(text: str, schema: type[T] | TypeAdapter[T]) -> T:
    """The first JSON value in ``text`` that validates against ``schema``.

    Raises :class:`JSONExtractionError` when the reply holds no JSON, else the validation error of the
    first (most likely) value.
    """
    adapter = _adapter(schema)
    first_error: ValidationError | None = None
    for value in iter_json_values(text):
        try:
            return adapter.validate_python(value)
        except ValidationError as exc:
            first_error = first_error or exc
    if first_error is not None:
        raise first_error
    raise JSONExtractionError(f"no JSON object or array found in the reply: {_clip(text, 200)!r}")


# -- chat_json --------------------------------------------------------------------------------------------


def chat_json(
    client: SupportsChat,
    messages: Messages,
    schema: type[T] | TypeAdapter[T],
    *,
    max_attempts: int = 3,
    json_mode: bool = False,
    instruct: bool = True,
    backoff_base: float = 0.5,
    backoff_max: float = 4.0,
    sleep: Callable[[float], None] = time.sleep,
    **chat_kwargs: Any,
) -> T:
    """Chat until the reply validates against ``schema`` (a pydantic model class or a ``TypeAdapter``).

    ``instruct`` adds a system instruction with the JSON schema; ``json_mode`` also sends
    ``response_format={"type": "json_object"}`` (dropped again if the server rejects it with 400/422).
    Transport failures are the client's business (it retries them) and propagate as ``LLMError``.
    """
    adapter = _adapter(schema)
    base = _with_instruction(messages, adapter) if instruct else _as_list(messages)
    conversation = base
    last_error = ""
    for attempt in range(1, max_attempts + 1):
        try:
            result = client.chat(conversation, **_format_kwargs(json_mode, chat_kwargs))
        except LLMHTTPError as exc:
            if not (json_mode and exc.status_code in (400, 422)):
                raise
            log.warning("server rejected response_format=json_object (%s); asking without it", exc)
            json_mode = False
            result = client.chat(conversation, **chat_kwargs)
        try:
            return parse_reply(result.text, adapter)
        except ValueError as exc:  # JSONExtractionError or pydantic ValidationError
            last_error = _describe(exc)
        _note_invalid(client, chat_kwargs, attempt, max_attempts, last_error)
        if attempt < max_attempts:
            conversation = [*base, *_correction(result.text, last_error)]
            sleep(_backoff(attempt, backoff_base, backoff_max))
    raise LLMError(
        f"LLM gave no valid {_name(schema)} in {max_attempts} attempt(s); last error: {last_error}"
    )


async def achat_json(
    client: Any,
    messages: Messages,
    schema: type[T] | TypeAdapter[T],
    *,
    max_attempts: int = 3,
    json_mode: bool = False,
    instruct: bool = True,
    backoff_base: float = 0.5,
    backoff_max: float = 4.0,
    **chat_kwargs: Any,
) -> T:
    """Async twin of :func:`chat_json` for an :class:`~kgrag.llm.client.AsyncChatClient`."""
    adapter = _adapter(schema)
    base = _with_instruction(messages, adapter) if instruct else _as_list(messages)
    conversation = base
    last_error = ""
    for attempt in range(1, max_attempts + 1):
        try:
            result = await client.chat(conversation, **_format_kwargs(json_mode, chat_kwargs))
        except LLMHTTPError as exc:
            if not (json_mode and exc.status_code in (400, 422)):
                raise
            log.warning("server rejected response_format=json_object (%s); asking without it", exc)
            json_mode = False
            result = await client.chat(conversation, **chat_kwargs)
        try:
            return parse_reply(result.text, adapter)
        except ValueError as exc:
            last_error = _describe(exc)
        _note_invalid(client, chat_kwargs, attempt, max_attempts, last_error)
        if attempt < max_attempts:
            conversation = [*base, *_correction(result.text, last_error)]
            await asyncio.sleep(_backoff(attempt, backoff_base, backoff_max))
    raise LLMError(
        f"LLM gave no valid {_name(schema)} in {max_attempts} attempt(s); last error: {last_error}"
    )


# -- helpers ----------------------------------------------------------------------------------------------


def json_instruction(adapter: TypeAdapter[Any]) -> str:
    """The system instruction that asks for bare JSON matching the adapter's schema."""
    text = "Reply with a single JSON value only: no prose before or after it, no Markdown code fences."
    try:
        schema = json.dumps(adapter.json_schema(), ensure_ascii=False)
    except Exception:  # some types have no JSON schema; the instruction still helps
        return text
    return f"{text}\nThe JSON must validate against this JSON schema:\n{schema}"


def _with_instruction(messages: Messages, adapter: TypeAdapter[Any]) -> list[Message]:
    """A copy of ``messages`` whose system message ends with the JSON instruction (one system message only,
    since some chat templates reject a second one)."""
    instruction = json_instruction(adapter)
    messages = _as_list(messages)
    if messages and messages[0].get("role") == "system" and isinstance(messages[0].get("content"), str):
        messages[0]["content"] = f"{messages[0]['content']}\n\n{instruction}"
        return messages
    return [{"role": "system", "content": instruction}, *messages]


def _correction(reply: str, error: str) -> list[Message]:
    """The follow-up turn: the model's own bad reply, then what was wrong with it."""
    return [
        {"role": "assistant", "content": reply},
        {
            "role": "user",
            "content": (
                "Your previous reply could not be used: it was not valid JSON for the required schema.\n"
                f"Error: {error}\n"
                "Reply again with only the corrected JSON value, nothing else."
            ),
        },
    ]


def _as_list(messages: Messages) -> list[Message]:
    if isinstance(messages, str):
        return [{"role": "user", "content": messages}]
    return [dict(m) for m in messages]


def _format_kwargs(json_mode: bool, chat_kwargs: dict[str, Any]) -> dict[str, Any]:
    return {**chat_kwargs, "response_format": {"type": "json_object"}} if json_mode else chat_kwargs


def _note_invalid(
    client: Any, chat_kwargs: dict[str, Any], attempt: int, max_attempts: int, error: str
) -> None:
    log.warning("LLM JSON reply %d/%d invalid: %s", attempt, max_attempts, _clip(error, 300))
    ledger = getattr(client, "ledger", None)
    if ledger is not None:
        ledger.record_invalid_output(chat_kwargs.get("model") or getattr(client, "model", ""))


def _describe(exc: ValueError) -> str:
    """A compact error for the model to read: one line per pydantic error, without documentation URLs."""
    if isinstance(exc, ValidationError):
        lines = [
            f"{'.'.join(map(str, e['loc'])) or '(root)'}: {e['msg']}" for e in exc.errors(include_url=False)
        ]
        text = f"{exc.error_count()} validation error(s): " + "; ".join(lines)
    else:
        text = str(exc)
    return _clip(text, _MAX_ERROR_CHARS)


def _backoff(attempt: int, base: float, cap: float) -> float:
    return min(cap, base * 2 ** (attempt - 1))


def _adapter(schema: type[T] | TypeAdapter[T]) -> TypeAdapter[T]:
    return schema if isinstance(schema, TypeAdapter) else TypeAdapter(schema)


def _name(schema: Any) -> str:
    """``Keywords`` for a model class, ``list[int]`` for a generic alias, ``TypeAdapter(...)`` for an adapter."""
    if isinstance(schema, type) and not hasattr(schema, "__origin__"):
        return schema.__name__
    return str(schema)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"

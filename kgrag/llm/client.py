"""OpenAI-compatible chat-completions client (vLLM, Ollama, OpenAI, ...) over httpx.

    client = ChatClient.from_settings(get_settings(), ledger=UsageLedger())
    result = client.chat([{"role": "user", "content": "Hello"}])
    result.text, result.usage.total_tokens

Every request has a connect and a read timeout. Timeouts, connection errors, 408, 429 and 5xx answers are
retried up to ``max_retries`` times with exponential backoff plus jitter (a ``Retry-After`` header, when the
server sends one, sets the wait instead). Other 4xx answers raise at once with the server's own message. The
API key is sent only in the ``Authorization`` header and is scrubbed from every error and log message.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import random
import ssl
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Self

import httpx

from kgrag.config import Settings
from kgrag.errors import LLMError
from kgrag.llm.accounting import Usage, UsageLedger

log = logging.getLogger(__name__)

Message = dict[str, Any]
Messages = Sequence[Message] | str

RETRYABLE_STATUS = frozenset({408, 429})  # plus every 5xx


class LLMHTTPError(LLMError):
    """The endpoint answered with an HTTP error that is not worth retrying (e.g. 400, 401, 404)."""

    def __init__(self, message: str, status_code: int) -> None:
        super().__init__(message)
        self.status_code = status_code


@dataclass(frozen=True)
class ChatResult:
    """One completion: the first choice's text, why it stopped, token usage and the raw response."""

    text: str
    finish_reason: str | None
    usage: Usage
    model: str
    attempts: int = 1
    raw: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class _Failure:
    """Why one HTTP attempt failed, and whether another attempt may help."""

    message: str
    retryable: bool = True
    status_code: int | None = None
    retry_after: float | None = None


class _ChatCore:
    """What the sync and async clients share: request building, response parsing, retry policy."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str = "",
        timeout: float = 60.0,
        connect_timeout: float = 10.0,
        max_retries: int = 3,
        backoff_base: float = 0.5,
        backoff_max: float = 8.0,
        jitter: float = 0.1,
        retry_after_max: float = 60.0,
        ledger: UsageLedger | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        if not base_url:
            raise LLMError(
                "no LLM endpoint configured: set KGRAG_LLM_BASE_URL (an OpenAI-compatible …/v1 URL)"
            )
        self.base_url = base_url.rstrip("/")
        self.url = f"{self.base_url}/chat/completions"
        self.model = model
        self.max_retries = max_retries
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.jitter = jitter
        self.retry_after_max = retry_after_max
        self.ledger = ledger
        self.timeout = httpx.Timeout(timeout, connect=min(connect_timeout, timeout))
        self._api_key = api_key
        self._headers = {"Content-Type": "application/json", **(headers or {})}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"

    @classmethod
    def from_settings(
        cls, settings: Settings, *, ledger: UsageLedger | None = None, **overrides: Any
    ) -> Self:
        """A client for ``settings.llm_*``; keyword overrides win (e.g. ``backoff_base=0.01``)."""
        kwargs: dict[str, Any] = {
            "api_key": settings.llm_api_key,
            "timeout": settings.llm_timeout,
            "max_retries": settings.llm_max_retries,
            "ledger": ledger,
        }
        kwargs.update(overrides)
        return cls(settings.llm_base_url, settings.llm_model, **kwargs)

    def __repr__(self) -> str:  # never shows the key
        return (
            f"{type(self).__name__}(url={self.url!r}, model={self.model!r}, max_retries={self.max_retries})"
        )

    # -- request / response -------------------------------------------------------------------------------

    def _payload(
        self,
        messages: Messages,
        model: str | None,
        temperature: float | None,
        max_tokens: int | None,
        response_format: dict[str, Any] | None,
        extra: dict[str, Any],
    ) -> dict[str, Any]:
        if isinstance(messages, str):
            messages = [{"role": "user", "content": messages}]
        payload: dict[str, Any] = {"model": model or self.model, "messages": list(messages)}
        if temperature is not None:
            payload["temperature"] = temperature
        if max_tokens is not None:
            payload["max_tokens"] = max_tokens
        if response_format is not None:
            payload["response_format"] = response_format
        payload.update(extra)
        return payload

    def _parse(self, response: httpx.Response, attempts: int) -> ChatResult:
        try:
            raw = response.json()
            choice = raw["choices"][0]
            text = (choice.get("message") or {}).get("content") or ""
            usage = Usage.from_openai(raw.get("usage"))
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
            snippet = self._redact(response.text[:300])
            raise LLMError(
                f"LLM endpoint {self.url} returned a malformed completion ({exc!r}): {snippet}"
            ) from None
        return ChatResult(
            text=text,
            finish_reason=choice.get("finish_reason"),
            usage=usage,
            model=raw.get("model") or "",
            attempts=attempts,
            raw=raw,
        )

    def _http_failure(self, response: httpx.Response) -> _Failure:
        status = response.status_code
        retryable = status in RETRYABLE_STATUS or status >= 500
        message = f"HTTP {status}: {self._redact(_server_message(response))}"
        return _Failure(message, retryable, status, _retry_after(response.headers.get("retry-after")))

    def _transport_failure(self, exc: httpx.TransportError) -> _Failure:
        if isinstance(exc, httpx.TimeoutException):
            return _Failure(f"timed out ({type(exc).__name__}, read timeout {self.timeout.read}s)")
        detail = self._redact(str(exc)) or type(exc).__name__
        retryable = not isinstance(exc, httpx.UnsupportedProtocol)
        return _Failure(f"connection error ({type(exc).__name__}: {detail})", retryable)

    # -- retry policy -------------------------------------------------------------------------------------

    def backoff_delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        if retry_after is not None:
            return min(retry_after, self.retry_after_max)
        delay = min(self.backoff_max, self.backoff_base * 2 ** (attempt - 1))
        return delay + random.uniform(0, self.jitter * delay)

    def _after_failure(self, failure: _Failure, attempt: int) -> float:
        """Raise if this failure is final; else log it and return how long to wait before retrying."""
        if not failure.retryable:
            message = f"LLM request to {self.url} failed: {failure.message}"
            if failure.status_code is None:
                raise LLMError(message)
            raise LLMHTTPError(message, failure.status_code)
        if attempt > self.max_retries:
            raise LLMError(
                f"LLM request to {self.url} failed after {attempt} attempt(s); last error: {failure.message}"
            )
        delay = self.backoff_delay(attempt, failure.retry_after)
        log.warning(
            "LLM attempt %d/%d to %s failed (%s); retrying in %.2fs",
            attempt,
            self.max_retries + 1,
            self.url,
            failure.message,
            delay,
        )
        return delay

    def _record(
        self, payload: dict[str, Any], started: float, attempts: int, result: ChatResult | None
    ) -> None:
        if self.ledger is not None:
            self.ledger.record_call(
                payload["model"],
                usage=result.usage if result else None,
                retries=attempts - 1,
                wall_time_s=time.perf_counter() - started,
                failed=result is None,
            )

    def _redact(self, text: str) -> str:
        return text.replace(self._api_key, "***") if self._api_key else text


class ChatClient(_ChatCore):
    """Synchronous client; one keep-alive connection pool per instance (use as a context manager or close()).

    Options (keyword-only): ``api_key``, ``timeout`` (read, s), ``connect_timeout`` (s, capped by timeout),
    ``max_retries``, ``backoff_base``/``backoff_max``/``jitter`` (delay = min(max, base·2^(n-1)) plus up to
    jitter·delay), ``retry_after_max`` (cap on a server's Retry-After), ``ledger``, ``headers``; ``sleep``
    and ``transport`` are seams for tests.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        sleep: Callable[[float], None] = time.sleep,
        transport: httpx.BaseTransport | None = None,
        **options: Any,
    ) -> None:
        super().__init__(base_url, model, **options)
        self._sleep = sleep
        self._http = httpx.Client(
            timeout=self.timeout, headers=self._headers, transport=transport, verify=_ssl_context()
        )

    def chat(
        self,
        messages: Messages,
        *,
        model: str | None = None,
        temperature: float | None = 0.0,
        max_tokens: int | None = None,
        response_format: dict[str, Any] | None = None,
        **extra: Any,
    ) -> ChatResult:
        """POST one chat completion, retrying transient failures; ``extra`` goes into the JSON body."""
        payload = self._payload(messages, model, temperature, max_tokens, response_format, extra)
        started = time.perf_counter()
        attempt = 0
        try:
            while True:
                attempt += 1
                try:
                    response = self._http.post(self.url, json=payload)
                except httpx.TransportError as exc:
                    failure = self._transport_failure(exc)
                else:
                    if response.is_success:
                        result = self._parse(response, attempt)
                        self._record(payload, started, attempt, result)
                        return result
                    failure = self._http_failure(response)
                self._sleep(self._after_failure(failure, attempt))
        except LLMError:
            self._record(payload, started, attempt, None)
            raise

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ChatClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class AsyncChatClient(_ChatCore):
    """The same client for asyncio code (LangGraph async nodes, FastAPI handlers)."""

    def __init__(
        self, base_url: str, model: str, *, transport: httpx.AsyncBaseTransport | None = None, **options: Any
    ) -> None:
        super().__init__(base_url, model, **options)
        self._http = httpx.AsyncClient(
            timeout=self.timeout, headers=self._headers, transport=transport, verify=_ssl_context()
        )

    async def chat(
        self,
        messages: Messages,
        *,
        model: str | None = None,
        temperature: float | None = 0.0,
        max_tokens: int | None = None,
        response_format: dict[str, Any] | None = None,
        **extra: Any,
    ) -> ChatResult:
        """Async twin of :meth:`ChatClient.chat`."""
        payload = self._payload(messages, model, temperature, max_tokens, response_format, extra)
        started = time.perf_counter()
        attempt = 0
        try:
            while True:
                attempt += 1
                try:
                    response = await self._http.post(self.url, json=payload)
                except httpx.TransportError as exc:
                    failure = self._transport_failure(exc)
                else:
                    if response.is_success:
                        result = self._parse(response, attempt)
                        self._record(payload, started, attempt, result)
                        return result
                    failure = self._http_failure(response)
                await asyncio.sleep(self._after_failure(failure, attempt))
        except LLMError:
            self._record(payload, started, attempt, None)
            raise

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncChatClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


@lru_cache(maxsize=1)
def _ssl_context() -> ssl.SSLContext:
    """One verified TLS context per process: building it costs ~0.1 s, so clients share it."""
    return httpx.create_ssl_context()


def _server_message(response: httpx.Response) -> str:
    """The error text a server put in its body: OpenAI ``{"error": {"message"}}``, FastAPI ``detail``, or raw."""
    try:
        body = response.json()
    except ValueError:
        return response.text.strip()[:500] or response.reason_phrase
    if isinstance(body, dict):
        error = body.get("error", body.get("detail", body.get("message")))
        if isinstance(error, dict):
            error = error.get("message", error)
        if error is not None:
            return str(error)[:500]
    return str(body)[:500]


def _retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header (delta-seconds or HTTP-date); None if absent or unreadable."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())

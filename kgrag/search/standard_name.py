"""The LLM's "what is the standard name" rewrite of a keyword, validated against the stored names: with an LLM
configured (``Settings.llm_enabled``), ask it for the standard name(s) of a user's word (肺痨 -> 肺结核) and keep
only answers that are stored names of the type or map to one by the LLM-free other-name forms.

    standard_names("肺痨", "medical network")  # ['肺结核'] (the LLM's answer, not yet validated); [] on failure

Contract:

* :func:`standard_names` sends the ``standard_name`` prompt (:func:`kgrag.llm.prompts.load_prompt`) and the word
  through :class:`kgrag.llm.client.ChatClient` and validates the JSON reply (:func:`kgrag.llm.json_output.
  chat_json`, one retry). Any failure — no LLM configured, connection error, HTTP error, unusable reply — gives
  ``[]`` (logged), never an exception: the caller keeps its LLM-free forms. Answers are stripped, deduplicated,
  the word itself dropped, at most :data:`MAX_ANSWERS`; answers are cached per (LLM, domain, word), so the types
  of one network share one request per keyword.
* :func:`validated` keeps the answers that are a stored name (``resolve`` gives the positions of the names an
  answer stands for: the name itself, or the other-name forms' best hit) — the caller turns them into
  ``standard_name`` storage forms. An answer that resolves to nothing is dropped.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable
from threading import Lock

from pydantic import BaseModel, Field

from kgrag.config import get_settings
from kgrag.llm.client import ChatClient
from kgrag.llm.json_output import chat_json
from kgrag.llm.prompts import load_prompt

log = logging.getLogger(__name__)

__all__ = ["MAX_ANSWERS", "StandardNames", "standard_names", "validated"]

#: answers kept from one reply
MAX_ANSWERS = 3
_CACHE_SIZE = 1024
_cache: OrderedDict[tuple[str, str], list[str]] = OrderedDict()
_lock = Lock()


class StandardNames(BaseModel):
    """The reply: the likeliest standard names first."""

    standard_names: list[str] = Field(default_factory=list, max_length=10)


def standard_names(word: str, domain: str) -> list[str]:
    """The configured LLM's standard names for ``word`` (a thing named in ``domain``: the knowledge network's
    name); [] on any failure."""
    settings = get_settings()
    if not settings.llm_enabled or not word.strip():
        return []
    key = (f"{settings.llm_base_url}|{settings.llm_model}|{domain}", word)
    with _lock:
        if key in _cache:
            return list(_cache[key])
    try:
        client = ChatClient.from_settings(settings)
        messages = [{"role": "system", "content": load_prompt("standard_name").format(domain=domain)},
                    {"role": "user", "content": word}]
        reply = chat_json(client, messages, StandardNames, max_attempts=2, instruct=False, temperature=0.0)
    except Exception as exc:  # noqa: BLE001 - any LLM failure: the caller keeps its LLM-free forms
        log.warning("standard-name rewrite of %r failed (%s: %s); LLM-free forms used", word, type(exc).__name__, exc)
        return []
    answers = list(dict.fromkeys(a.strip() for a in reply.standard_names if a and a.strip() and a.strip() != word))
    answers = answers[:MAX_ANSWERS]
    with _lock:
        _cache[key] = answers
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return list(answers)


def validated(answers: list[str], resolve: Callable[[str], list[int]]) -> list[tuple[str, int]]:
    """``(answer, name position)`` for the answers ``resolve`` maps to stored names, in answer order."""
    out: list[tuple[str, int]] = []
    for answer in answers:
        for position in resolve(answer):
            if all(position != p for _, p in out):
                out.append((answer, position))
    return out

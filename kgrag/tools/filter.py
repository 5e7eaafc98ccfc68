"""Relation filters (spec kg-tools.md, the specification of the KG tools for LLM agents, §2.4 and the flatten
filter of §3.5.5).

:class:`LLMRelationFilter` asks an OpenAI-compatible model to pick and order relations (JSON list), retrying
with exponential backoff up to ``attempts`` times on API or parse failures and falling back to the caller's
order. :class:`OfflineRelationFilter` is the LLM-free strategy: BM25 + embedding similarity (hybrid rerank).
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from kgrag.errors import LLMError
from kgrag.llm.client import ChatClient
from kgrag.llm.json_output import JSONExtractionError, iter_json_values
from kgrag.llm.prompts import load_prompt
from kgrag.rank.rerank import HybridReranker

log = logging.getLogger(__name__)


@dataclass
class FilterOutcome:
    """What a filter chose, and how (for the trace and the statistics)."""

    relations: list[str]
    strategy: str  # "llm" | "fallback" | "offline"
    attempts: int = 0
    error: str = ""


class RelationFilter(Protocol):
    def select(self, candidates: Sequence[str], fallback: Sequence[str], question: str, entity_name: str,
               top_k: int, flatten: bool = False) -> FilterOutcome: ...


def build_prompt(candidates: Sequence[str], question: str, entity_name: str, top_k: int, flatten: bool) -> str:
    template = load_prompt("flatten_relation_filter" if flatten else "relation_filter").replace("{top_k}", str(top_k))
    return (
        f"{template}\nQuestion: {question}\nTopic Entity: {json.dumps([entity_name], ensure_ascii=False)}\n"
        f"Relations: {json.dumps(list(candidates), ensure_ascii=False)}\n\nYour Selections: "
    )


def parse_selection(text: str, candidates: Sequence[str]) -> list[str]:
    """The first JSON list of strings in ``text``, restricted to ``candidates`` (LLM order, no duplicates).

    Raises ``ValueError`` when there is no JSON list or none of its items is a candidate."""
    allowed = set(candidates)
    for value in iter_json_values(text):
        if isinstance(value, list):
            chosen: list[str] = []
            for item in value:
                if isinstance(item, str) and item in allowed and item not in chosen:
                    chosen.append(item)
            if chosen:
                return chosen
            raise ValueError("the JSON list names none of the candidate relations")
    raise JSONExtractionError("no JSON list in the reply")


@dataclass
class LLMRelationFilter:
    """The spec's LLM filter: one chat call per attempt, exponential backoff (capped at 4 s) between attempts."""

    client: ChatClient
    model: str | None = None
    attempts: int = 3
    backoff: float = 1.0
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)

    def select(self, candidates: Sequence[str], fallback: Sequence[str], question: str, entity_name: str,
               top_k: int, flatten: bool = False) -> FilterOutcome:
        prompt = build_prompt(candidates, question, entity_name, top_k, flatten)
        error = ""
        for attempt in range(1, self.attempts + 1):
            try:
                reply = self.client.chat([{"role": "user", "content": prompt}], model=self.model, temperature=0.0)
                return FilterOutcome(parse_selection(reply.text, candidates), "llm", attempt)
            except (LLMError, ValueError) as exc:
                error = f"{type(exc).__name__}: {exc}"
                log.debug("relation filter attempt %d/%d failed: %s", attempt, self.attempts, error)
                if attempt < self.attempts:
                    self.sleep(min(self.backoff * 2 ** (attempt - 1), 4.0))
        return FilterOutcome(list(fallback), "fallback", self.attempts, error)


@dataclass
class OfflineRelationFilter:
    """LLM-free: rank candidates by BM25 + embedding similarity to the question and entity name."""

    reranker: HybridReranker = field(default_factory=HybridReranker)

    def select(self, candidates: Sequence[str], fallback: Sequence[str], question: str, entity_name: str,
               top_k: int, flatten: bool = False) -> FilterOutcome:
        query = f"{question} {entity_name}".strip()
        order = self.reranker.rerank(query, distinguishing_texts(candidates, flatten), top_k)
        return FilterOutcome([candidates[i] for i, _ in order], "offline")


_SUFFIX = re.compile(r"_\d+$")


def distinguishing_texts(candidates: Sequence[str], flatten: bool = False) -> list[str]:
    """Readable texts that tell candidates apart: the dotted prefix they all share is dropped, and for flatten
    relations their numeric clash suffix (``…government_position_held.office_holder_3`` → ``office holder``),
    so similarity is decided by what differs, not by the common path."""
    parts = [(_SUFFIX.sub("", c) if flatten else c).split(".") for c in candidates]
    shared = 0
    while parts and all(len(p) > shared + 1 for p in parts) and len({p[shared] for p in parts}) == 1:
        shared += 1
    return [" ".join(p[shared:]).replace("_", " ") for p in parts]

"""``QueryParam`` of the query modes (spec query-modes.md, the specification of LightRAG-style query modes,
"QueryParam 详解"), validated with pydantic.

    QueryParam(mode="hybrid", top_k=20, only_need_context=True).fingerprint()

Defaults are the spec's (``max_entity_tokens`` 6000, ``max_relation_tokens`` 8000; chunks get what is left of
``max_total_tokens``) and LightRAG's where the spec names a field without a default (``top_k`` 40,
``chunk_top_k`` 20, ``max_total_tokens`` 30000, ``response_type`` "Multiple Paragraphs"). Unknown fields, an
unknown mode and negative budgets are rejected (a 400 naming the field on the API).
"""

from __future__ import annotations

import hashlib
import json
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["MODES", "ChatMessage", "QueryMode", "QueryParam", "QueryRequest", "QueryResult"]

QueryMode = Literal["local", "global", "hybrid", "naive", "mix", "bypass"]
MODES: tuple[str, ...] = get_args(QueryMode)


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: Literal["user", "assistant", "system"]
    content: str = Field(max_length=20000)


class QueryParam(BaseModel):
    """How one query runs; see the module docstring for defaults."""

    model_config = ConfigDict(extra="forbid")

    mode: QueryMode = "mix"
    top_k: int = Field(default=40, ge=1, le=500, description="entities retrieved per keyword set")
    chunk_top_k: int = Field(default=20, ge=1, le=500, description="chunks kept per chunk route")
    max_entity_tokens: int = Field(default=6000, ge=0, le=200_000)
    max_relation_tokens: int = Field(default=8000, ge=0, le=200_000)
    max_total_tokens: int = Field(default=30000, ge=0, le=1_000_000)
    only_need_context: bool = False
    only_need_prompt: bool = False
    response_type: str = Field(default="Multiple Paragraphs", min_length=1, max_length=200)
    user_prompt: str = Field(default="", max_length=4000)
    conversation_history: list[ChatMessage] = Field(default_factory=list, max_length=200)
    history_turns: int = Field(default=3, ge=0, le=100, description="latest user/assistant pairs in the prompt")
    hl_keywords: list[str] = Field(default_factory=list, max_length=50)
    ll_keywords: list[str] = Field(default_factory=list, max_length=50)

    @model_validator(mode="after")
    def _keywords_clean(self) -> QueryParam:
        self.hl_keywords = [k.strip() for k in self.hl_keywords if k and k.strip()]
        self.ll_keywords = [k.strip() for k in self.ll_keywords if k and k.strip()]
        return self

    def fingerprint(self) -> str:
        """sha256 of the canonical JSON of every field (first 16 hex digits)."""
        blob = json.dumps(self.model_dump(mode="json"), sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


class QueryRequest(BaseModel):
    """The body of ``POST /api/query``."""

    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=4000)
    kn_id: str = Field(default="medical", min_length=1, max_length=200)
    param: QueryParam = Field(default_factory=QueryParam)


class QueryResult(BaseModel):
    """What a query returns (spec ``QueryResult``): ``response`` (empty with ``only_need_context``), the
    ``context`` the LLM sees (or the whole prompt with ``only_need_prompt``), and ``raw_data`` for debugging."""

    response: str
    context: str = ""
    raw_data: dict = Field(default_factory=dict)

"""Stage 1 of the query modes: high-level (themes, relations) and low-level (named things) keywords.

    keywords = mode_keywords("百日咳有哪些症状", store, "medical", param)   # hl ['症状'], ll ['百日咳'], 'rules'

Order: preset ``param.hl_keywords`` / ``ll_keywords`` skip extraction (either list given = both taken as given);
with an LLM client the model is asked for ``{"high_level_keywords", "low_level_keywords"}`` (validated JSON,
bounded retries); when it fails, or without a client, the rules run: the stored names the question contains
(maximal spans) and contextual recall's entity keywords (:func:`kgrag.search.keywords.extract_keywords`) are
low-level, its relation/schema words high-level. A question with neither falls back to the question
itself as its one low-level keyword, so retrieval still has something to search with.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from kgrag.errors import LLMError
from kgrag.llm.json_output import chat_json
from kgrag.llm.prompts import load_prompt
from kgrag.search.contextual import lexicon_for
from kgrag.search.keywords import extract_keywords

if TYPE_CHECKING:  # pragma: no cover
    from kgrag.llm.client import ChatClient
    from kgrag.modes.params import QueryParam
    from kgrag.network.store import NetworkStore

__all__ = ["LLMKeywords", "ModeKeywords", "mode_keywords", "rule_keywords"]


class LLMKeywords(BaseModel):
    high_level_keywords: list[str] = Field(default_factory=list, max_length=20)
    low_level_keywords: list[str] = Field(default_factory=list, max_length=20)


@dataclass
class ModeKeywords:
    high_level: list[str]
    low_level: list[str]
    source: str  # preset | llm | rules
    errors: list[str] = field(default_factory=list)


def _clean(words: list[str]) -> list[str]:
    return list(dict.fromkeys(w.strip() for w in words if w and w.strip()))[:20]


def rule_keywords(query: str, store: NetworkStore, kn_id: str) -> ModeKeywords:
    lexicon = lexicon_for(store, kn_id)
    extraction = extract_keywords(query, lexicon)
    stored = [query[i:j] for i, j in lexicon.name_spans(query) if query[i:j] not in lexicon.relation_words
              and query[i:j] not in lexicon.type_words]
    low = _clean(stored + [e.text for e in extraction.entities] + [a.text for a in extraction.attribute_values])
    high = _clean([w.text for w in extraction.relation_words])
    if not low and not high:
        low = [query.strip()]
    return ModeKeywords(high, low, "rules")


def mode_keywords(
    query: str, store: NetworkStore, kn_id: str, param: QueryParam, llm: ChatClient | None = None
) -> ModeKeywords:
    """The keywords one query searches with (see the module docstring)."""
    if param.hl_keywords or param.ll_keywords:
        return ModeKeywords(list(param.hl_keywords), list(param.ll_keywords), "preset")
    errors: list[str] = []
    if llm is not None:
        prompt = load_prompt("mode_keywords").format(query=query)
        try:
            got = chat_json(llm, [{"role": "user", "content": prompt}], LLMKeywords, max_attempts=2)
            high, low = _clean(got.high_level_keywords), _clean(got.low_level_keywords)
            if high or low:
                return ModeKeywords(high, low, "llm")
            errors.append("LLM returned no keywords; rules used")
        except LLMError as exc:
            errors.append(f"LLM keyword extraction failed ({exc}); rules used")
    rules = rule_keywords(query, store, kn_id)
    rules.errors = errors
    return rules

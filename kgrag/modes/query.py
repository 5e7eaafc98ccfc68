"""The query modes end to end (spec query-modes.md, the specification of LightRAG-style query modes,
``kgQuery``): keywords → search → context → prompt → answer.

    result = kg_query("百日咳有哪些症状", store, "medical", QueryParam(mode="hybrid", only_need_context=True))
    result.context, result.raw_data["tokens"]

* ``bypass`` returns :data:`FAIL_RESPONSE` at once: no keyword extraction, no search.
* ``only_need_prompt``: ``response`` empty, ``context`` the whole prompt (system + user messages).
* ``only_need_context``: ``response`` empty, ``context`` the context block, ``raw_data`` what it was made of.
* Otherwise the LLM answers (Markdown, citations) when a client is given; without one — or when it fails after
  its retries — ``response`` says so (in the question's language) and ``context`` carries the context, so the
  caller still has the evidence. ``raw_data["llm"]`` is ``answered`` / ``none`` / ``failed``.

``raw_data`` always has the mode, the keywords and where they came from, what was searched, the kept rows, the
token count per section and the time per stage (ms).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from kgrag.errors import LLMError
from kgrag.modes.context import build_context
from kgrag.modes.index_delta import current_index
from kgrag.modes.keywords import mode_keywords
from kgrag.modes.params import QueryParam, QueryResult
from kgrag.modes.prompt import build_messages, prompt_text
from kgrag.modes.search import run_search, sources
from kgrag.rank.token_count import TokenCounter
from kgrag.rank.tokenize import has_cjk

if TYPE_CHECKING:  # pragma: no cover
    from kgrag.llm.client import ChatClient
    from kgrag.network.store import NetworkStore

__all__ = ["FAIL_RESPONSE", "kg_query"]

#: what ``bypass`` (and a search that finds nothing) answers — LightRAG's ``fail_response``
FAIL_RESPONSE = "Sorry, I'm not able to provide an answer to that question.[no-context]"
_NO_LLM = {
    "zh": "未配置 LLM（KGRAG_LLM_BASE_URL 为空），未生成回答；检索到的上下文见 context。",
    "en": "No LLM is configured (KGRAG_LLM_BASE_URL is empty), so no answer was generated; the retrieved "
    "context is in `context`.",
}
_LLM_FAILED = {
    "zh": "LLM 调用失败（{error}），未生成回答；检索到的上下文见 context。",
    "en": "The LLM call failed ({error}), so no answer was generated; the retrieved context is in `context`.",
}


def _language(text: str) -> str:
    return "zh" if has_cjk(text) else "en"


def kg_query(
    query: str, store: NetworkStore, kn_id: str, param: QueryParam | None = None, llm: ChatClient | None = None
) -> QueryResult:
    """Run one query over network ``kn_id`` (see the module docstring)."""
    param = param or QueryParam()
    searched = sources(param.mode)
    if param.mode == "bypass":
        return QueryResult(response=FAIL_RESPONSE, raw_data={"mode": "bypass", "searched": searched})
    timings: dict[str, float] = {}
    clock = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        timings[name] = round((now - clock) * 1000, 3)
        clock = now

    keywords = mode_keywords(query, store, kn_id, param, llm)
    lap("keywords")
    index = current_index(store, kn_id)
    lap("index")
    hits = run_search(index, param.mode, keywords, query, param)
    lap("search")
    counter = TokenCounter.default()
    fixed = counter.count_one(prompt_text(build_messages(query, "", param)))
    ctx = build_context(index, hits, param, fixed_tokens=fixed, counter=counter)
    messages = build_messages(query, ctx.text, param)
    lap("context")
    raw: dict[str, Any] = {
        "mode": param.mode,
        "kn_id": kn_id,
        "keywords": {"high_level": keywords.high_level, "low_level": keywords.low_level,
                     "source": keywords.source},
        "searched": searched,
        "entities": ctx.entities,
        "relations": ctx.relations,
        "chunks": ctx.chunks,
        "references": ctx.references,
        "tokens": {**ctx.tokens, "prompt_fixed": fixed},
        "dropped": ctx.dropped,
        "timings_ms": timings,
        "errors": list(keywords.errors),
    }
    if param.only_need_prompt:
        return QueryResult(response="", context=prompt_text(messages), raw_data=raw)
    if param.only_need_context:
        return QueryResult(response="", context=ctx.text, raw_data=raw)
    if not (ctx.entities or ctx.relations or ctx.chunks):
        raw["llm"] = "skipped"
        return QueryResult(response=FAIL_RESPONSE, context=ctx.text, raw_data=raw)
    language = _language(query)
    if llm is None:
        raw["llm"] = "none"
        return QueryResult(response=_NO_LLM[language], context=ctx.text, raw_data=raw)

    try:
        answer = llm.chat(messages).text.strip()
    except LLMError as exc:
        raw["llm"] = "failed"
        raw["errors"].append(f"LLM answer failed: {exc}")
        return QueryResult(response=_LLM_FAILED[language].format(error=type(exc).__name__), context=ctx.text,
                           raw_data=raw)
    lap("answer")
    raw["llm"] = "answered"
    return QueryResult(response=answer, context=ctx.text, raw_data=raw)

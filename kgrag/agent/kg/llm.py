"""The LLM planner on a triple graph, in two styles (``AgentSettings.llm_style``):

- ``kg-query`` (KG-R1, spec kg-tools.md, the specification of the KG tools for LLM agents): the model writes
  one ``<kg-query>…</kg-query>`` per turn; the session's text comes back as a user message
  ``<information>…</information>``; ``<answer>…</answer>`` ends the turn.
- ``tools``: OpenAI tool calling over ``reason_paths`` / ``get_relations`` / ``get_triples``; a reply without a
  tool call is the answer.

    update, summary, failure = llm_plan(state, run)   # failure is None, or why the LLM could not plan

The first request carries a short system prompt (``kgrag/llm/prompts/agent_kg_query.txt`` /
``agent_kg_tools.txt``: the topic's stored name and the chains schema recall ranked) and the question. A reply
that is neither a query nor an answer is answered with a reminder (counted as a call, so a model that never
complies still ends at ``max_tool_calls``). Calls and tokens of the turn accumulate in ``usage``. Any LLM failure
returns ``failure``: the caller runs the LLM-free plan and says so.
"""

from __future__ import annotations

import re
from typing import Any

from kgrag.agent.kg.calls import kg_openai_tools
from kgrag.agent.kg.needs import TripleRun
from kgrag.agent.turn.node import tool_arguments
from kgrag.agent.turn.state import AgentState, ToolCall
from kgrag.llm.client import LLMError
from kgrag.llm.prompts import load_prompt

__all__ = ["llm_plan", "result_messages", "system_prompt"]

_QUERY = re.compile(r"<kg-query>(.*?)</kg-query>", re.DOTALL)
_ANSWER = re.compile(r"<answer>.*?</answer>", re.DOTALL)
REMINDER = "[Write one <kg-query>…</kg-query>, or <answer>…</answer> when you know the answer.]"
#: what one tool result may put in front of the model (characters)
RESULT_CHARS = 2000


def system_prompt(state: AgentState, style: str, max_calls: int) -> str:
    topic = state.get("topic")
    chains = state.get("schema", {}).get("chains") or []
    shown = "; ".join(f"{c['chain']} ({c['p']:.2f})" for c in chains[:3])
    if not shown:
        shown = ", ".join(state.get("schema", {}).get("relations", [])[:10]) or "none"
    name = "agent_kg_query" if style == "kg-query" else "agent_kg_tools"
    return load_prompt(name).format(kg=state["kg"], max_calls=max_calls,
                                    topic=f"{topic['name']}" if topic else "none linked", chains=shown)


def _usage(state: AgentState, result: Any) -> dict[str, int]:
    usage = dict(state.get("usage") or {})
    usage["llm_calls"] = usage.get("llm_calls", 0) + 1
    usage["prompt_tokens"] = usage.get("prompt_tokens", 0) + result.usage.prompt_tokens
    usage["completion_tokens"] = usage.get("completion_tokens", 0) + result.usage.completion_tokens
    return usage


def llm_plan(state: AgentState, run: TripleRun) -> tuple[dict[str, Any], str, str | None]:
    """One model turn: ``(update, summary, None)``, or ``({}, "", why)`` when the LLM failed."""
    client = run.resources.llm()
    if client is None:
        return {}, "", "no LLM endpoint is configured (KGRAG_LLM_BASE_URL)"
    style = run.settings.llm_style
    messages = list(state.get("llm_messages") or [])
    if not messages:
        messages = [{"role": "system", "content": system_prompt(state, style, run.settings.max_tool_calls)},
                    {"role": "user", "content": state["question"]}]
    extra: dict[str, Any] = {"tools": kg_openai_tools(), "tool_choice": "auto"} if style == "tools" else {}
    try:
        result = client.chat(messages, **extra)
        message = result.raw["choices"][0]["message"]
    except LLMError as exc:
        return {}, "", f"{type(exc).__name__}: {exc}"
    except (KeyError, IndexError, TypeError) as exc:
        return {}, "", f"malformed completion: {exc!r}"
    usage = _usage(state, result)
    content = message.get("content") or ""
    calls = (message.get("tool_calls") or []) if style == "tools" else []
    assistant: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        assistant["tool_calls"] = calls
    messages.append(assistant)
    n = len(state.get("tool_calls", []))
    update: dict[str, Any] = {"llm_messages": messages, "usage": usage}
    if calls:
        pending = [ToolCall(id=tc.get("id") or f"llm_call_{n + i + 1}", name=str((tc.get("function") or {}).get(
            "name", "")), args=tool_arguments((tc.get("function") or {}).get("arguments")), why="llm")
                   for i, tc in enumerate(calls)]
        return {**update, "pending": pending}, f"LLM asked for {', '.join(c['name'] for c in pending)}", None
    query = _QUERY.search(content) if style == "kg-query" else None
    if query is not None and not _ANSWER.search(content[: query.start()]):
        call = ToolCall(id=f"llm_call_{n + 1}", name="kg_query", args={"text": query.group(0)}, why="llm")
        return {**update, "pending": [call]}, f"LLM query: {query.group(1).strip()[:120]}", None
    if _ANSWER.search(content) or (style == "tools" and content.strip()):
        return {**update, "answer": content.strip(), "pending": [], "done": True}, "LLM answered", None
    call = ToolCall(id=f"llm_call_{n + 1}", name="kg_query", args={"text": content[:200]}, why="llm: no query")
    return {**update, "pending": [call]}, "LLM wrote neither a query nor an answer", None


def _cut(text: str) -> str:
    return text if len(text) <= RESULT_CHARS else text[: RESULT_CHARS - 1] + "…"


def result_messages(calls: list[ToolCall], style: str) -> list[dict[str, Any]]:
    """The messages answering the model's calls: ``<information>`` user messages, or ``tool`` messages."""
    out: list[dict[str, Any]] = []
    for call in calls:
        text = _cut(str((call.get("result") or {}).get("text", call.get("error", ""))))
        if call.get("why") == "llm: no query":
            text = REMINDER
        if style == "tools":
            out.append({"role": "tool", "tool_call_id": call.get("id", ""), "content": text})
        else:
            out.append({"role": "user", "content": f"<information>{text}</information>"})
    return out

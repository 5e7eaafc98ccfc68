"""The LLM planner: OpenAI-compatible tool calling over the agent's tools (:mod:`kgrag.agent.kn.tools`).

    update, summary, failure = llm_plan(state, run)   # failure is None, or why the LLM could not plan

The first call of a turn sends the system prompt (``kgrag/llm/prompts/agent_tools.txt``: the network's schema,
contextual recall's storage forms and ranked intents, the thread's earlier turns) and the question, with the tools
as functions. A reply with ``tool_calls`` becomes the pending calls (arguments that are not JSON are passed on as
text, so the tool answers with an error the model reads); a reply with text only is the answer. Each later call
carries the conversation so far (tool results as ``tool`` messages, cut to a few thousand characters). Any
LLM failure (HTTP errors after the client's retries, timeouts, a malformed completion) is returned as
``failure``: the caller runs the LLM-free plan and says so.
"""

from __future__ import annotations

from typing import Any

from kgrag.agent.kn.needs import NetworkRun
from kgrag.agent.kn.tools import llm_result_text, openai_tools
from kgrag.agent.turn.node import tool_arguments
from kgrag.agent.turn.state import AgentState, ToolCall
from kgrag.llm.client import LLMError
from kgrag.llm.prompts import load_prompt
from kgrag.network.schema.model import KnowledgeNetwork

__all__ = ["llm_plan", "system_prompt", "tool_messages"]


def _schema_text(network: KnowledgeNetwork) -> str:
    lines = []
    for ot in network.object_types:
        props = ", ".join(p.name + (f" ({p.display_name})" if p.display_name else "") for p in ot.data_properties)
        lines.append(f"- {ot.id} ({ot.name}; named by {ot.display_key}): {props}")
    for rt in network.relation_types:
        lines.append(f"- {rt.source_object_type_id} -[{rt.id}]-> {rt.target_object_type_id} ({rt.name})")
    return "\n".join(lines)


def _example(network: KnowledgeNetwork) -> dict[str, str]:
    """The prompt's call examples in the network's own terms: the source type of its first relation type, that
    type's display property, another of its properties, and the relation."""
    rt = network.relation_types[0] if network.relation_types else None
    ot = next((o for o in network.object_types if rt is None or o.id == rt.source_object_type_id),
              network.object_types[0] if network.object_types else None)
    if ot is None:
        return {"ot": "<object type>", "key": "name", "prop": "<property>", "rel": "<relation type>"}
    prop = next((p.name for p in ot.data_properties if p.name != ot.display_key), ot.display_key)
    return {"ot": ot.id, "key": ot.display_key, "prop": prop, "rel": rt.id if rt else "<relation type>"}


def system_prompt(state: AgentState, network: KnowledgeNetwork) -> str:
    forms = [f"{f['keyword']} -> {f['object_type']} {f['name']!r} ({f['match_type']})"
             for f in state.get("context", {}).get("storage_forms", [])[:10]]
    intents = [f"{label} ({p:.2f})" for label, p in state.get("schema", {}).get("intents", [])[:3]]
    context = ("storage forms: " + ("; ".join(forms) or "none") + "\nintents: " + (", ".join(intents) or "none"))
    history = "\n".join(f"- Q: {t.get('question', '')} | topic: {(t.get('topic') or {}).get('name', '-')}"
                        for t in (state.get("history") or [])[-5:]) or "none"
    return load_prompt("agent_tools").format(kn_id=state["kn_id"], schema=_schema_text(network), context=context,
                                             history=history, **_example(network))


def llm_plan(state: AgentState, run: NetworkRun) -> tuple[dict[str, Any], str, str | None]:
    """One model turn: ``(update, summary, None)``, or ``({}, "", why)`` when the LLM failed."""
    client = run.resources.llm()
    if client is None:
        return {}, "", "no LLM endpoint is configured (KGRAG_LLM_BASE_URL)"
    messages = list(state.get("llm_messages") or [])
    if not messages:
        messages = [{"role": "system", "content": system_prompt(state, run.resources.network(state["kn_id"]))},
                    {"role": "user", "content": state["question"]}]
    try:
        result = client.chat(messages, tools=openai_tools(), tool_choice="auto")
        message = result.raw["choices"][0]["message"]
    except LLMError as exc:
        return {}, "", f"{type(exc).__name__}: {exc}"
    except (KeyError, IndexError, TypeError) as exc:
        return {}, "", f"malformed completion: {exc!r}"
    calls = message.get("tool_calls") or []
    assistant = {"role": "assistant", "content": message.get("content") or ""}
    if calls:
        assistant["tool_calls"] = calls
    messages.append(assistant)
    if not calls:
        text = (message.get("content") or "").strip()
        return {"llm_messages": messages, "answer": text, "pending": [], "done": True}, f"LLM answered ({len(text)} chars)", None
    pending: list[ToolCall] = []
    for i, tc in enumerate(calls):
        function = tc.get("function") or {}
        pending.append(ToolCall(id=tc.get("id") or f"llm_call_{len(state.get('tool_calls', [])) + i + 1}",
                                name=str(function.get("name", "")), args=tool_arguments(function.get("arguments")),
                                why="llm"))
    names = ", ".join(c["name"] for c in pending)
    return {"llm_messages": messages, "pending": pending}, f"LLM asked for {len(pending)} calls: {names}", None


def tool_messages(calls: list[ToolCall]) -> list[dict[str, Any]]:
    """The ``tool`` messages answering the model's calls."""
    return [{"role": "tool", "tool_call_id": c.get("id", ""), "content": llm_result_text(c)} for c in calls]

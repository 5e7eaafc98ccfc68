"""A run of the agent graph as events a person can watch: one ``step`` event as each node finishes (what it found, in
a form a page shows without reading the state), then one ``end`` event with the answer, its evidence drawn as a
graph (:func:`kgrag.console.evidence_graph.evidence_graph`) and what a follow-up needs; ``error`` when the run fails.

    for event in agent_events(graph, {"question": "who directed Carnival Lights?", "kg": "demo"}, context):
        print(event["event"], event.get("node"), event.get("ms"))

Events are plain JSON-able dicts (``POST /agent/stream`` sends them as NDJSON lines, :mod:`kgrag.api.agent_routes`):

- ``{"event": "start", "kind": "kn"|"kg", "source", "question"}`` before the first node;
- ``{"event": "step", "node", "ms", "summary", "detail"}`` per finished node (``plan`` and ``tools`` may repeat);
  when a node first sets the turn's query graph, a ``{"event": "step", "node": "query_graph", …}`` follows it
  with the plan (``summary``: its confidence, how many other plans were scored, what it did not use; ``detail``:
  ``query_graph``, ``line``, ``candidates``, ``confidence``, ``unused``);
- ``{"event": "end", "answer", "answers", "withheld", "confidence", "unused", "query_graph", "evidence",
  "evidence_graph", "errors", "planner", "intents", "history", "session_id", "ms"}``;
- ``{"event": "error", "message"}`` when the graph raised (the run's input was valid, something broke).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from typing import Any

from kgrag.console.evidence_graph import evidence_graph

__all__ = ["agent_events", "call_view", "plan_line", "query_graph_step", "step_detail"]

#: rows of a list a step's detail keeps (the final state has them all)
MAX_ROWS = 12
PREVIEW_CHARS = 400


def _json(value: Any, limit: int = PREVIEW_CHARS) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _names(values: list[Any], limit: int = 8) -> str:
    shown = ", ".join(str(v) for v in values[:limit])
    return shown + (f" … (+{len(values) - limit})" if len(values) > limit else "")


def _result_text(name: str, result: Any) -> str:
    """A tool result in one line a person reads (counts and the first names), the JSON cut short otherwise."""
    if not isinstance(result, dict):
        return _json(result)
    if name == "query_instance_subgraph":
        nodes = result.get("nodes") or {}
        ends = [((nodes.get(e) or {}).get("properties") or {}).get("name") or e for e in result.get("ends") or []]
        return f"{len(nodes)} instances, {len(result.get('links') or [])} links; reached: {_names(ends)}"
    if name == "query_object_instance":
        found = result.get("instances") or []
        names = [(i.get("properties") or {}).get("name") or i.get("id") for i in found]
        return f"{len(found)} instances: {_names(names)}"
    if name == "rank_chains" and result.get("chain") is not None:
        answers = [a.get("name") for a in result.get("answers") or []]
        return f"best chain {result['chain']} (score {result.get('score', 0):.2f}) → {_names(answers)}"
    if name == "query_graph" and isinstance(result.get("query_graph"), dict):
        answers = [a.get("name", a) if isinstance(a, dict) else a for a in result.get("answers") or []]
        line = plan_line(result["query_graph"])
        return f"plan {line} → {_names(answers)}" if answers else f"plan {line}: {result.get('reason') or 'no answer'}"
    if "answers" in result and isinstance(result["answers"], list):
        return f"answers: {_names([a.get('name', a) if isinstance(a, dict) else a for a in result['answers']])}"
    return _json(result)


def call_view(call: Mapping[str, Any]) -> dict[str, Any]:
    """One tool call as the page shows it: name, arguments, why, ms and a readable result (or its error)."""
    view = {"id": call.get("id"), "name": call.get("name"), "args": call.get("args"), "why": call.get("why", ""),
            "ms": call.get("ms")}
    if call.get("error"):
        view["error"] = call["error"]
    elif "result" in call:
        view["result"] = _result_text(str(call.get("name")), call.get("result"))
    return view


def step_detail(node: str, update: Mapping[str, Any], seen_calls: int = 0) -> dict[str, Any]:
    """What a finished node found, cut to what a page lists (``seen_calls``: tool calls shown by earlier steps)."""
    if node == "extract_keywords":
        return {"keywords": list(update.get("keywords") or [])[:MAX_ROWS]}
    if node == "schema_recall":
        schema = dict(update.get("schema") or {})
        for key in ("intents", "chains", "relations", "object_types", "relation_types"):
            if isinstance(schema.get(key), list):
                schema[key] = schema[key][:MAX_ROWS]
        return {"schema": schema}
    if node == "contextual_recall":
        forms = list((update.get("context") or {}).get("storage_forms") or [])
        return {"storage_forms": forms[:MAX_ROWS], "topic": update.get("topic")}
    if node == "plan":
        return {"calls": [call_view(c) for c in update.get("pending") or []],
                "answered": not update.get("pending")}
    if node == "tools":
        return {"calls": [call_view(c) for c in list(update.get("tool_calls") or [])[seen_calls:]]}
    if node == "answer":
        return {"answer": update.get("answer", ""), "answers": list(update.get("answers") or [])[:MAX_ROWS * 4]}
    return {}


def plan_line(plan: Mapping[str, Any]) -> str:
    """A query graph's one line (``describe()``), or "" for a value that is not a valid plan."""
    from kgrag.query_graph.plan import QueryGraph

    try:
        return QueryGraph.model_validate(plan).describe()
    except ValueError:
        return ""


def query_graph_step(update: Mapping[str, Any]) -> dict[str, Any]:
    """The ``query_graph`` step event of a node update that set the turn's plan."""
    plan = update.get("query_graph") or {}
    candidates = [{"line": plan_line(c), "score": c.get("score")}
                  for c in (update.get("query_graph_candidates") or [])[:MAX_ROWS]]
    line = plan_line(plan)
    detail = {"query_graph": plan, "line": line, "candidates": candidates,
              "confidence": update.get("confidence"), "unused": list(update.get("unused") or [])}
    confidence = update.get("confidence")
    summary = (f"confidence {float(confidence):.2f}" if isinstance(confidence, int | float) else "planned") + (
        f"; {len(candidates)} other plans scored" if candidates else "") + (
        f"; not used: {', '.join(detail['unused'])}" if detail["unused"] else "")
    return {"event": "step", "node": "query_graph", "ms": 0.0, "summary": summary, "detail": detail}


def _end(state: Mapping[str, Any], ms: float) -> dict[str, Any]:
    return {"event": "end", "answer": state.get("answer", ""), "answers": state.get("answers", []),
            "withheld": state.get("withheld", []), "confidence": state.get("confidence"),
            "unused": state.get("unused", []), "query_graph": state.get("query_graph"),
            "evidence": state.get("evidence", []), "evidence_graph": evidence_graph(state),
            "errors": state.get("errors", []), "planner": state.get("planner", "rules"),
            "intents": (state.get("schema") or {}).get("ranker"), "history": state.get("history", []),
            "session_id": state.get("session_id"), "topic": state.get("topic"), "ms": round(ms, 1)}


def agent_events(graph: Any, state: Mapping[str, Any], context: Any) -> Iterator[dict[str, Any]]:
    """Run ``graph`` on ``state`` (with the run ``context``) and yield the events of the module docstring."""
    started = time.perf_counter()
    kind = "kg" if state.get("kg") or getattr(context, "kg", None) else "kn"
    source = state.get("kg") or getattr(context, "kg", None) or state.get("kn_id") or getattr(context, "kn_id", None)
    yield {"event": "start", "kind": kind, "source": source, "question": state.get("question", "")}
    final: Mapping[str, Any] = {}
    seen_calls = 0
    planned = False
    try:
        for mode, chunk in graph.stream(dict(state), context=context, stream_mode=["updates", "values"]):
            if mode == "values":
                final = chunk
                continue
            for node, update in (chunk or {}).items():
                update = update or {}
                entry = next((e for e in reversed(update.get("trace") or []) if isinstance(e, dict)), {})
                yield {"event": "step", "node": node, "ms": entry.get("ms"), "summary": entry.get("summary", ""),
                       "detail": step_detail(node, update, seen_calls)}
                if "tool_calls" in update:
                    seen_calls = len(update["tool_calls"] or [])
                if update.get("query_graph") and not planned:
                    planned = True
                    yield query_graph_step(update)
    except Exception as exc:  # noqa: BLE001 - the page shows why the run broke instead of a dead stream
        yield {"event": "error", "message": f"the agent failed: {type(exc).__name__}: {exc}"}
        return
    yield _end(final, (time.perf_counter() - started) * 1000)

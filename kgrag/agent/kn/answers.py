"""Answers from tool results: the values, the instances they came from (evidence) and a sentence saying so.

    rows = evidence_from(call)            # [{"value", "value_instance", "instance", "instance_name", "via"}]
    text = compose_answer(topic_name, via_name, values, kn_id)

A ``query_object_instance`` call that asked for some properties gives one row per value of those properties
(list properties one row per item); a ``query_instance_subgraph`` call gives one row per link of its last step:
the instance it reached, and the one it was reached from. Values keep their stored spelling and first-seen order, without repeats.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kgrag.agent.state import ToolCall
from kgrag.network.model import KnowledgeNetwork

__all__ = ["answer_values", "compose_answer", "element_name", "evidence_from", "passages_from"]


def _values(value: Any) -> list[str]:
    if value is None or value == "":
        return []
    if isinstance(value, list | tuple):
        return [s for v in value for s in _values(v)]
    return [str(value)]


def _name(instance: dict[str, Any]) -> str:
    props = instance.get("properties") or {}
    return str(props.get("name") or instance.get("id", ""))


def evidence_from(call: ToolCall) -> list[dict[str, Any]]:
    """Evidence rows of one successful query call (empty for failed calls and for search tools)."""
    result = call.get("result")
    if not isinstance(result, dict):
        return []
    rows: list[dict[str, Any]] = []
    if call.get("name") == "query_object_instance":
        wanted = [p for p in (call.get("args") or {}).get("properties") or [] if p not in ("name", "id")]
        for inst in result.get("instances", []):
            props = inst.get("properties") or {}
            for prop in wanted or [k for k in props if k != "name"]:
                for v in _values(props.get(prop)):
                    rows.append({"value": v, "value_instance": None, "instance": inst["id"],
                                 "instance_name": _name(inst), "via": prop})
    elif call.get("name") == "query_instance_subgraph":
        nodes = result.get("nodes") or {}
        last = len(result.get("steps") or []) - 1
        for link in result.get("links") or []:
            if link["step"] != last:
                continue
            near, end = (link["source"], link["target"]) if link["forward"] else (link["target"], link["source"])
            rows.append({"value": _name(nodes.get(end, {"id": end})), "value_instance": end, "instance": near,
                         "instance_name": _name(nodes.get(near, {"id": near})), "via": link["relation_type"]})
    return rows


def answer_values(evidence: Sequence[dict[str, Any]]) -> list[str]:
    """The distinct values of ``evidence``, first seen first."""
    return list(dict.fromkeys(str(r["value"]) for r in evidence))


def element_name(network: KnowledgeNetwork, element: str) -> str:
    """How the schema names a relation type or property (its display name, else its id)."""
    for rt in network.relation_types:
        if rt.id == element:
            return rt.name or element
    for ot in network.object_types:
        for p in ot.data_properties:
            if p.name == element:
                return p.display_name or element
    return element


def compose_answer(topic: str, via: str, values: Sequence[str], max_listed: int) -> str:
    """``百日咳 — 症状: 咳嗽；发热 … (12 in all)``."""
    if not values:
        return f"{topic} — {via}: no value is stored in the knowledge network."
    shown = "；".join(values[:max_listed])
    more = f" … ({len(values)} in all)" if len(values) > max_listed else ""
    return f"{topic} — {via}: {shown}{more}"


def passages_from(calls: Sequence[ToolCall], limit: int = 3, chars: int = 120) -> str:
    """The first chunks a ``query_modes`` call returned, one ``[n] title: text…`` line each ("" when none)."""
    for call in calls:
        result = call.get("result") or {}
        if call.get("name") != "query_modes" or not result.get("chunks"):
            continue
        titles = {r["reference_id"]: r["title"] for r in result.get("references", [])}
        return "\n".join(f"[{c['reference_id']}] {titles.get(c['reference_id'], '')}: {c['content'][:chars]}…"
                         for c in result["chunks"][:limit])
    return ""

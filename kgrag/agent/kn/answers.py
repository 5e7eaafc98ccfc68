"""Answers from tool results: the values, the instances they came from (evidence) and a sentence saying so.

    rows = evidence_from(call, display_keys(network))  # [{"value", "value_instance", "instance", "instance_name", "via",
                                                       #   "direction"}]
    text = compose_answer(topic_name, relation_reading(network, via, rows[0]["direction"]), values, max_listed)

A ``query_object_instance`` call that asked for some properties gives one row per value of those properties
(list properties one row per item); a ``query_instance_subgraph`` call gives one row per link of its last step:
the instance it reached, and the one it was reached from, and ``direction``: ``out`` when the link was walked from its
source, ``in`` when against it (a property row is ``out``). :func:`relation_reading` says a relation in the direction
it was walked: "wrote" forwards, "written by" backwards. Values keep their stored spelling and first-seen order, without repeats.
An instance is named by its object type's display property (``display_key``: ``name``, a book's ``title`` …), else
by its id; that property is the instance's name, not one of the values asked for.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from kgrag.agent.turn.state import ToolCall
from kgrag.network.schema.model import KnowledgeNetwork

__all__ = ["answer_values", "compose_answer", "display_keys", "element_name", "evidence_from", "passages_from",
           "relation_reading", "type_names"]


def _values(value: Any) -> list[str]:
    if value is None or value == "":
        return []
    if isinstance(value, list | tuple):
        return [s for v in value for s in _values(v)]
    return [str(value)]


def display_keys(network: KnowledgeNetwork) -> dict[str, str]:
    """Object type id -> the property that names its instances (``display_key``)."""
    return {ot.id: ot.display_key for ot in network.object_types}


def _key(instance: dict[str, Any], keys: Mapping[str, str] | None) -> str:
    return (keys or {}).get(instance.get("object_type", ""), "name")


def _name(instance: dict[str, Any], keys: Mapping[str, str] | None) -> str:
    """The instance's display-property value, else its id."""
    value = (instance.get("properties") or {}).get(_key(instance, keys))
    return str(value) if value not in (None, "") else str(instance.get("id", ""))


def evidence_from(call: ToolCall, keys: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """Evidence rows of one successful query call (empty for failed calls and for search tools); ``keys``:
    :func:`display_keys` of the network (without it, instances are named by their ``name`` property)."""
    result = call.get("result")
    if not isinstance(result, dict):
        return []
    rows: list[dict[str, Any]] = []
    if call.get("name") == "query_object_instance":
        asked = (call.get("args") or {}).get("properties") or []
        for inst in result.get("instances", []):
            props = inst.get("properties") or {}
            own = _key(inst, keys)  # the instance's name: never a value asked for
            wanted = [p for p in asked if p not in (own, "id")] or [k for k in props if k != own]
            for prop in wanted:
                for v in _values(props.get(prop)):
                    rows.append({"value": v, "value_instance": None, "instance": inst["id"],
                                 "instance_name": _name(inst, keys), "via": prop, "direction": "out"})
    elif call.get("name") == "query_instance_subgraph":
        nodes = result.get("nodes") or {}
        last = len(result.get("steps") or []) - 1
        # a path back to the start's own type (a person's spouses through their marriages) reaches the start too
        start = set(result.get("start") or []) if last > 0 else set()
        for link in result.get("links") or []:
            if link["step"] != last:
                continue
            near, end = (link["source"], link["target"]) if link["forward"] else (link["target"], link["source"])
            if end in start:
                continue
            rows.append({"value": _name(nodes.get(end, {"id": end}), keys), "value_instance": end,
                         "instance": near, "instance_name": _name(nodes.get(near, {"id": near}), keys),
                         "via": link["relation_type"], "direction": "out" if link["forward"] else "in"})
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


#: a short comment fragment that reads a relation backwards ("written by", "part of")
_PASSIVE = re.compile(r"^[a-z]+(?:ed|en|wn|ne|t)\s+(?:by|of|in|from|to)$|^[a-z]+\s+of$")


def relation_reading(network: KnowledgeNetwork, element: str, direction: str = "out") -> str:
    """How an answer names a relation walked ``direction``: forwards its display name (``wrote``); backwards
    (``in``) the passive phrase its comment gives ("the author wrote the book; written by" → ``written by``), else
    its name + "by" for a one-word verb in -ed ("directed" → ``directed by``), else ``<source type> <name>``
    ("born in" backwards → ``author born in``: the instances of that type that relation reaches the topic from).
    A property (or a relation walked forwards) reads as :func:`element_name`."""
    name = element_name(network, element)
    rt = next((r for r in network.relation_types if r.id == element), None)
    if direction != "in" or rt is None:
        return name
    for piece in re.split(r"[;,，、；。:：()（）|/]+", rt.comment or ""):
        phrase = " ".join(piece.split()).lower()
        if _PASSIVE.match(phrase) and phrase.split()[0] != name.lower():
            return phrase
    if re.fullmatch(r"[A-Za-z]+ed", name):
        return f"{name} by"
    source = next((ot.name or ot.id for ot in network.object_types if ot.id == rt.source_object_type_id),
                  rt.source_object_type_id)
    return f"{source} {name}" if name.isascii() else f"{source}（{name}）"


def type_names(network: KnowledgeNetwork, preferred: Sequence[str] = (), counts: Mapping[str, int] | None = None,
               most: int = 3) -> str:
    """How a message names what to ask about: up to ``most`` of the network's object types by their names
    (``author, book or genre``) — the ``preferred`` ones (schema recall's) first, then those with the most
    instances (``counts``), then in schema order; "" for a network without object types."""
    order = {ot.id: n for n, ot in enumerate(network.object_types)}
    by_count = sorted(order, key=lambda t: (-(counts or {}).get(t, 0), order[t]))
    chosen = list(dict.fromkeys([t for t in preferred if t in order] + by_count))[:most]
    names = list(dict.fromkeys(next(ot.name or ot.id for ot in network.object_types if ot.id == t)
                               for t in chosen))
    if len(names) < 2:
        return "".join(names)
    return f"{', '.join(names[:-1])} or {names[-1]}"


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

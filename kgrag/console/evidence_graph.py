"""A turn's evidence as a graph a page can draw: the topic, the instances / entities the tool calls reached, the links
or triples between them, and the answers marked — from the final state alone (no store access).

    evidence_graph(state)  # {"nodes": [{"id", "label", "type", "role", "properties"?}], "edges": [...], "truncated"}

``role`` is ``topic``, ``answer`` or ``node``: only a node that is one of the turn's answer values (``answers``, or
the ``withheld`` best guess) is an ``answer`` — nodes an evidence path passes through (co-stars reached by the same
hop, a ranked candidate left out of the answer set) stay ``node``; a node with no name is labelled by its id, never
"(cvt)"; an edge is ``{"id", "source", "target", "label"}``. On a knowledge
network the graph comes from the successful ``query_instance_subgraph`` calls (every step of the path, through
unnamed CVT nodes) and ``query_object_instance`` calls (an instance and the property values asked for, as value
nodes). On a triple graph it comes from the evidence paths' triples (ids and their stored names). At most
``max_nodes`` nodes are kept (topic and answers first); ``truncated`` says how many were left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["MAX_NODES", "evidence_graph"]

#: the most nodes a drawn evidence graph keeps (a page stays readable; the rows are all in ``evidence``)
MAX_NODES = 300
#: property values longer than this are cut in a node's properties (the page shows them, the store has them all)
MAX_VALUE_CHARS = 600


class _Builder:
    def __init__(self) -> None:
        self.nodes: dict[str, dict[str, Any]] = {}
        self.edges: dict[tuple[str, str, str], dict[str, Any]] = {}

    def node(self, node_id: str, label: str, node_type: str = "", properties: Mapping[str, Any] | None = None
             ) -> None:
        node = self.nodes.setdefault(node_id, {"id": node_id, "label": label or node_id, "type": node_type,
                                               "role": "node"})
        if label and node["label"] == node_id:  # first seen without its name (an unnamed hop), named now
            node["label"] = label
        if properties and "properties" not in node:
            node["properties"] = {k: _cut(v) for k, v in properties.items()}

    def edge(self, source: str, target: str, label: str) -> None:
        key = (source, target, label)
        if key not in self.edges:
            self.edges[key] = {"id": f"e{len(self.edges)}", "source": source, "target": target, "label": label}

    def mark(self, node_id: str | None, role: str) -> None:
        if node_id in self.nodes and self.nodes[node_id]["role"] != "topic":
            self.nodes[node_id]["role"] = role

    def graph(self, max_nodes: int) -> dict[str, Any]:
        order = {"topic": 0, "answer": 1, "node": 2}
        ranked = sorted(self.nodes.values(), key=lambda n: order[n["role"]])  # stable: first seen first
        kept = ranked[:max_nodes]
        ids = {n["id"] for n in kept}
        edges = [e for e in self.edges.values() if e["source"] in ids and e["target"] in ids]
        return {"nodes": kept, "edges": edges, "truncated": len(ranked) - len(kept)}


def _cut(value: Any) -> Any:
    if isinstance(value, str) and len(value) > MAX_VALUE_CHARS:
        return value[: MAX_VALUE_CHARS - 1] + "…"
    if isinstance(value, list):
        return [_cut(v) for v in value[:20]]
    return value


def _display(node: Mapping[str, Any]) -> str:
    props = node.get("properties") or {}
    for key in ("name", "title", "label"):
        if props.get(key) not in (None, ""):
            return str(props[key])
    return str(node.get("id", ""))


def _network_graph(state: Mapping[str, Any], builder: _Builder) -> None:
    names = {row["instance"]: row["instance_name"] for row in state.get("evidence") or [] if row.get("instance")}
    names.update({row["value_instance"]: row["value"] for row in state.get("evidence") or []
                  if row.get("value_instance")})
    for call in state.get("tool_calls") or []:
        result = call.get("result")
        if not isinstance(result, dict) or call.get("error"):
            continue
        if call.get("name") == "query_instance_subgraph":
            nodes = result.get("nodes") or {}
            for link in result.get("links") or []:
                for end in (link["source"], link["target"]):
                    info = nodes.get(end, {"id": end})
                    builder.node(end, names.get(end) or _display(info), info.get("object_type", ""),
                                 info.get("properties"))
                builder.edge(link["source"], link["target"], link["relation_type"])
        elif call.get("name") == "query_object_instance":
            for inst in result.get("instances") or []:
                builder.node(inst["id"], names.get(inst["id"]) or _display(inst), inst.get("object_type", ""),
                             inst.get("properties"))
    for row in state.get("evidence") or []:
        if row.get("value_instance"):
            builder.mark(row["value_instance"], "answer")
            continue
        value_id = f"{row['instance']}#{row['via']}={row['value']}"  # a property value: a node of its own
        builder.node(row["instance"], row.get("instance_name", ""), "")
        builder.node(value_id, str(row["value"]), "value")
        builder.edge(row["instance"], value_id, row["via"])
        builder.mark(value_id, "answer")
    topic = (state.get("topic") or {}).get("instance_id")
    if topic:
        builder.node(topic, (state.get("topic") or {}).get("name", ""), (state.get("topic") or {}).get("object_type", ""))
        builder.nodes[topic]["role"] = "topic"


def _triple_graph(state: Mapping[str, Any], builder: _Builder) -> None:
    topics = [(state.get("topic") or {})] + [k for k in state.get("keywords") or [] if k.get("entity_id")]
    # a path read off the reasoner names its entities only: the topic's and the answers' ids are known
    known = {t["name"]: t["entity_id"] for t in topics if t.get("name") and t.get("entity_id")}
    known.update({r["answer"]: r["entity_id"] for r in state.get("evidence") or []
                  if r.get("answer") and r.get("entity_id")})
    for row in state.get("evidence") or []:
        named = row.get("triples") or []
        ids = row.get("id_triples") or [[known.get(s, s), p, known.get(o, o)] for s, p, o in named]
        for (s_id, p, o_id), (s_name, _, o_name) in zip(ids, named, strict=False):
            builder.node(s_id, "" if s_name == "(cvt)" else s_name, "entity")
            builder.node(o_id, "" if o_name == "(cvt)" else o_name, "entity")
            builder.edge(s_id, o_id, p)
        builder.mark(row.get("entity_id"), "answer")
    for topic in topics:
        if topic.get("entity_id") in builder.nodes:
            builder.nodes[topic["entity_id"]]["role"] = "topic"


def _answers_only(state: Mapping[str, Any], builder: _Builder) -> None:
    """Unmark the nodes marked as answers that are not among the turn's answer values."""
    values = {str(v).strip() for v in [*(state.get("answers") or []), *(state.get("withheld") or [])]}
    if not values:  # no answer set to compare with: the evidence rows' ends stay marked
        return
    for node in builder.nodes.values():
        if node["role"] == "answer" and str(node["label"]).strip() not in values \
                and str(node["id"]).strip() not in values:
            node["role"] = "node"


def evidence_graph(state: Mapping[str, Any], max_nodes: int = MAX_NODES) -> dict[str, Any]:
    """The evidence of a final agent state as ``{"nodes", "edges", "truncated"}`` (see the module docstring)."""
    builder = _Builder()
    (_triple_graph if state.get("kg") else _network_graph)(state, builder)
    _answers_only(state, builder)
    return builder.graph(max_nodes)

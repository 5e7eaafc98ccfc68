"""Run a network :class:`~kgrag.query_graph.plan.QueryGraph` through the network's own query tools: which calls to
make next given the results so far, and the answers, evidence and count the finished calls give. No store is
touched here — the agent's tools node runs the calls (``query_instance_subgraph``, ``query_object_instance``), so
each one is traced and checked like any other.

    calls = next_calls(plan, network, "library", done=[])       # [{"name": "query_instance_subgraph", …}]
    … run them, append them (with "result") to done, ask again until [] …
    out = read_execution(plan, network, done)                   # out.answers == ["2"] for a count

Stages, each a batch of calls (labels ``qg:start``, ``qg:path`` / ``qg:constraint``, ``qg:middle``, then
``qg:final`` / ``qg:count``):

1. the core path from the first topic, and the entity constraint's path from the second (one
   ``query_instance_subgraph`` each, by instance id, each hop in its plan's direction); answers = the path's ends,
   intersected with the constraint's. A plan from ``start_type`` (no topic: "which genres have books published
   before 1900") first finds its start — ``query_object_instance`` on ``start_type`` with the middle constraint
   (``qg:start``) — then walks the path from those instances. A topic's path with a constraint on its middle
   node checks the middle instances it reached (``qg:middle``: ``id in [middles]`` AND the condition); the
   answers are the ends linked from the middles kept, each evidence row with the middle's value;
2. when the plan filters, orders or has no topic: one ``query_object_instance`` on the answer type with
   ``id in [answers]`` AND the literal constraint as a store condition (a year on a number property compares the
   number; on a date property the ISO text: "before 1900" → ``< "1900"``, "after 1900" → ``>= "1901"``), ordered by
   the aggregation's property (``argmin`` ascending, ``argmax`` descending; the best value and its ties kept) —
   or, for an aggregation that ``counts``, by the number of links of its relation (``order_by_links``: "the
   author who wrote the most books"; the best count and its ties kept) — plus a ``count_only`` call for a count
   with a constraint.

3. a literal constraint or an argmax / argmin whose ``relation`` is a relation type to a **value node**
   (:func:`linked_value`: Film -release date-> Year.value) reads the answers' value nodes (``qg:values:…``, one
   ``query_instance_subgraph`` from the answers) and keeps those that meet it / the best value and its ties; a plan
   without a topic starts from the value nodes instead (``qg:vstart``: ``query_object_instance`` on the value type
   with the condition and / or the order, then ``qg:vpath`` back to the answers) — "which films were released
   after 2005", "who is the youngest person".

Evidence rows are the agent's (:mod:`kgrag.agent.kn.answers`): ``{"value", "value_instance", "instance",
"instance_name", "via", "direction"}`` with ``direction`` ``in`` when the link was walked against its relation
(the answer text reads it "written by", not "wrote"), and ``property`` / ``property_value`` where a constraint or
an aggregation read one. A count's answer is the number (``["3"]``), its evidence the counted instances.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kgrag.network.schema.model import KnowledgeNetwork
from kgrag.query_graph.plan import Hop, LiteralConstraint, QueryGraph

__all__ = ["NetworkExecution", "literal_condition", "next_calls", "read_execution"]

#: instances one call returns at most (the tools' MAX_LIMIT)
LIMIT = 200
#: an argmax / argmin reads this many ordered instances, to keep the ties of the best value
TIES = 20
_DATES = frozenset({"date", "datetime", "timestamp", "year", "gyear", "date-time"})
_NUMERIC = frozenset({"integer", "int", "long", "short", "float", "double", "decimal", "number", "numeric"})


@dataclass
class NetworkExecution:
    answers: list[str] = field(default_factory=list)
    evidence: list[dict[str, Any]] = field(default_factory=list)
    count: int | None = None
    #: what went wrong or could not be checked, in words (a tool error, a path cut at the limit)
    problems: list[str] = field(default_factory=list)


def _by_label(done: Sequence[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    return {c.get("label", ""): c for c in done if str(c.get("label", "")).startswith("qg:")}


def _instance_id(topic_id: str, object_type: str) -> str:
    prefix = f"{object_type}:"
    return topic_id[len(prefix):] if topic_id.startswith(prefix) else topic_id


def _subgraph(kn_id: str, object_type: str, ids: Sequence[str], path: Sequence[Any]) -> dict[str, Any]:
    return {"kn_id": kn_id, "start": {"object_type": object_type, "ids": list(ids)},
            "relation_type_path": [{"relation_type": h.relation, "direction": h.direction} for h in path],
            "limit": LIMIT}


def literal_condition(lc: LiteralConstraint, prop_type: str) -> dict[str, Any]:
    """The store condition of a literal constraint on a property of type ``prop_type`` (see the module docstring)."""
    name = lc.relation
    if prop_type.lower() in _DATES and lc.kind == "year":
        low, high = int(lc.value), int(lc.value2 if lc.value2 is not None else lc.value)
        bounds = {"<": (None, str(low)), "<=": (None, str(low + 1)), ">": (str(low + 1), None),
                  ">=": (str(low), None), "=": (str(low), str(low + 1)), "between": (str(low), str(high + 1))}
        start, end = bounds[lc.op]
        parts = ([{"operation": ">=", "field": name, "value": start}] if start else []) + (
            [{"operation": "<", "field": name, "value": end}] if end else [])
        return parts[0] if len(parts) == 1 else {"operation": "and", "sub_conditions": parts}

    def number(v: float) -> float | int:
        return int(v) if float(v).is_integer() else v

    if lc.op == "between":
        return {"operation": "range", "field": name, "value": [number(lc.value), number(lc.value2 or lc.value)]}
    op = "==" if lc.op == "=" else lc.op
    value: Any = number(lc.value) if prop_type.lower() not in _DATES else str(number(lc.value))
    return {"operation": op, "field": name, "value": value}


def _prop_type(network: KnowledgeNetwork, type_id: str, prop: str) -> str:
    ot = next((o for o in network.object_types if o.id == type_id), None)
    found = next((p for p in ot.data_properties if p.name == prop), None) if ot else None
    return found.type if found is not None else "string"


def linked_value(network: KnowledgeNetwork, type_id: str, relation: str, direction: str) -> tuple[str, str] | None:
    """``(value node type, its value property)`` when ``relation`` is no data property of ``type_id`` but a relation
    type walked ``direction`` from it to a **value node**: a type no relation starts from, with exactly one number /
    date property besides its name (a year held as a linked instance, Freebase-style: Film -release date->
    Year.value); else None."""
    types = {o.id: o for o in network.object_types}
    ot = types.get(type_id)
    if ot is None or any(p.name == relation for p in ot.data_properties):
        return None
    rt = next((r for r in network.relation_types if r.id == relation), None)
    if rt is None:
        return None
    near, far = ((rt.source_object_type_id, rt.target_object_type_id) if direction == "out"
                 else (rt.target_object_type_id, rt.source_object_type_id))
    far_type = types.get(far)
    if near != type_id or far_type is None or any(r.source_object_type_id == far for r in network.relation_types):
        return None  # a value node only receives links (an author with a birth year is a thing, not a value)
    values = [p for p in far_type.data_properties
              if p.name != far_type.display_key and p.type.lower() in _NUMERIC | _DATES]
    return (far, values[0].name) if len(values) == 1 else None


@dataclass(frozen=True)
class _Link:
    """A literal constraint's or an aggregation's value read on a value node linked to the answer."""

    relation: str
    direction: str
    value_type: str
    prop: str

    @property
    def label(self) -> str:
        return f"qg:values:{self.relation}:{self.direction}"

    def back(self) -> Hop:
        return Hop(relation=self.relation, direction="in" if self.direction == "out" else "out")


def _links(plan: QueryGraph, network: KnowledgeNetwork) -> tuple[_Link | None, _Link | None]:
    """The (literal constraint's, aggregation's) value-node link, each None when it reads the answer's own
    property (or the plan has none)."""
    out: list[_Link | None] = []
    lc, agg = plan.literal_constraint, plan.aggregation
    for part in (lc if lc is not None and lc.on == "answer" else None,
                 agg if agg is not None and agg.op != "count" and not agg.counts else None):
        found = linked_value(network, plan.answer_type, part.relation, part.direction) if part is not None else None
        out.append(_Link(part.relation, part.direction, *found) if found is not None and part is not None else None)
    return out[0], out[1]


def _meets(value: Any, lc: LiteralConstraint) -> bool:
    """Whether a value read on a value node meets the literal constraint (a date's year for a year bound)."""
    try:
        number = float(str(value)[:4]) if lc.kind == "year" and not isinstance(value, int | float) else float(value)
    except (TypeError, ValueError):
        return False
    high = lc.value2 if lc.value2 is not None else lc.value
    return {"<": number < lc.value, "<=": number <= lc.value, ">": number > lc.value, ">=": number >= lc.value,
            "=": number == lc.value, "between": lc.value <= number <= high}[lc.op]


def _linked_values(call: Mapping[str, Any] | None, prop: str) -> dict[str, list[Any]]:
    """``{answer id: [its value nodes' values]}`` of a ``qg:values`` subgraph (from the answers, one step)."""
    result = (call or {}).get("result") or {}
    nodes = result.get("nodes") or {}
    out: dict[str, list[Any]] = {}
    for near, far in _last_links(call):
        value = ((nodes.get(far) or {}).get("properties") or {}).get(prop)
        if value is not None:
            out.setdefault(near, []).append(value)
    return out


def _ends(call: Mapping[str, Any] | None) -> list[str]:
    result = (call or {}).get("result") or {}
    return list(result.get("ends") or [])


def _middle_type(plan: QueryGraph, network: KnowledgeNetwork) -> str:
    """The type of the node a middle constraint filters: ``start_type``, else the one before the answer on the
    topic's path ("" when the plan has no middle constraint)."""
    lc = plan.literal_constraint
    if lc is None or lc.on != "middle":
        return ""
    if plan.start_type or not plan.topics:
        return plan.start_type
    current = plan.topics[0].type
    for hop in plan.path[:-1]:
        rt = next((r for r in network.relation_types if r.id == hop.relation), None)
        if rt is None:
            return ""
        current = rt.target_object_type_id if hop.direction == "out" else rt.source_object_type_id
    return current


def _instances_of(call: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    return list(((call or {}).get("result") or {}).get("instances") or [])


def _middles(calls: Mapping[str, Mapping[str, Any]]) -> dict[str, Mapping[str, Any]] | None:
    """The middle instances that met the middle constraint (None: the plan has no middle constraint)."""
    call = calls.get("qg:start") or calls.get("qg:middle")
    return None if call is None else {i["id"]: i for i in _instances_of(call)}


def _last_links(call: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """``(near, end)`` of each link of the subgraph's last step."""
    result = (call or {}).get("result") or {}
    last = len(result.get("steps") or []) - 1
    return [((link["source"], link["target"]) if link["forward"] else (link["target"], link["source"]))
            for link in result.get("links") or [] if link["step"] == last]


def _answer_ids(plan: QueryGraph, calls: Mapping[str, Mapping[str, Any]]) -> list[str]:
    ids = _ends(calls.get("qg:path") or calls.get("qg:vpath"))
    middles = _middles(calls)
    if middles is not None:
        reached = {end for near, end in _last_links(calls.get("qg:path")) if near in middles}
        ids = [i for i in ids if i in reached]
    if plan.entity_constraint is not None:
        other = set(_ends(calls.get("qg:constraint")))
        ids = [i for i in ids if i in other]
    return ids


def _order_key(value: Any) -> tuple[int, float | str]:
    try:
        return 0, float(value)
    except (TypeError, ValueError):
        return 1, str(value)


def _kept(plan: QueryGraph, network: KnowledgeNetwork, calls: Mapping[str, Mapping[str, Any]],
          ids: Sequence[str]) -> tuple[list[str], dict[str, Any]]:
    """The answers that meet the value-node parts of the plan (a literal constraint kept, an argmax / argmin's best
    value and its ties first), with the value read for each (``{}`` when the plan has no value-node part)."""
    lc_link, agg_link = _links(plan, network)
    kept, shown = list(ids), {}
    lc, agg = plan.literal_constraint, plan.aggregation
    if lc_link is not None and lc is not None:
        values = _linked_values(calls.get(lc_link.label), lc_link.prop)
        kept = [i for i in kept if any(_meets(v, lc) for v in values.get(i, []))]
        shown = {i: next(v for v in values[i] if _meets(v, lc)) for i in kept}
    if agg_link is not None and agg is not None:
        values = _linked_values(calls.get(agg_link.label), agg_link.prop)
        pick = max if agg.op == "argmax" else min
        best = {i: pick(values[i], key=_order_key) for i in kept if values.get(i)}
        top = sorted(set(best.values()), key=_order_key, reverse=agg.op == "argmax")[: agg.limit]
        kept = sorted((i for i in best if best[i] in top), key=lambda i: top.index(best[i]))
        shown = {i: best[i] for i in kept}
    return kept, shown


def _needs_final(plan: QueryGraph, network: KnowledgeNetwork) -> bool:
    """Whether the answers are read through ``query_object_instance`` on the answer type: a literal constraint or
    an argmax / argmin on their own property, or a plan with nothing to start from but the type."""
    agg = plan.aggregation
    lc = plan.literal_constraint
    lc_link, agg_link = _links(plan, network)
    if not plan.topics and not plan.path:
        return lc_link is None and agg_link is None or (lc is not None and lc_link is None) \
            or (agg is not None and agg.op in ("argmax", "argmin") and agg_link is None)
    return ((lc is not None and lc.on == "answer" and lc_link is None)
            or (agg is not None and agg.op in ("argmax", "argmin") and agg_link is None))


def _value_calls(plan: QueryGraph, network: KnowledgeNetwork, kn_id: str,
                 calls: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]] | None:
    """The calls that start a plan without a topic from its value nodes (``qg:vstart``: the value type's instances
    that meet the constraint / in the order asked; ``qg:vpath``: back to the answers), then read the answers' value
    nodes (``qg:values:…``); None when no such stage is due, ``[]`` when the plan has nothing left to read."""
    lc_link, agg_link = _links(plan, network)
    if lc_link is None and agg_link is None:
        return None
    lc, agg = plan.literal_constraint, plan.aggregation
    drive = lc_link or agg_link
    assert drive is not None
    if not plan.topics and not plan.path and "qg:vstart" not in calls:
        args: dict[str, Any] = {"kn_id": kn_id, "object_type": drive.value_type, "limit": LIMIT}
        if drive is lc_link and lc is not None:
            prop_type = _prop_type(network, drive.value_type, drive.prop)
            args["condition"] = literal_condition(lc.model_copy(update={"relation": drive.prop}), prop_type)
        if agg_link is not None and agg is not None and agg_link.label == drive.label:
            args.update(order_by=drive.prop, order="desc" if agg.op == "argmax" else "asc")
        return [{"name": "query_object_instance", "label": "qg:vstart", "args": args,
                 "why": f"query graph start (value nodes): {plan.describe()}"}]
    if "qg:vstart" in calls and "qg:vpath" not in calls:
        ids = [i["id"] for i in _instances_of(calls.get("qg:vstart"))]
        return [] if not ids else [{"name": "query_instance_subgraph", "label": "qg:vpath",
                                    "why": f"query graph: {plan.describe()}",
                                    "args": _subgraph(kn_id, drive.value_type, ids, [drive.back()])}]
    due = {link.label: link for link in (lc_link, agg_link) if link is not None and link.label not in calls}
    if not due:
        return None
    ids = _answer_ids(plan, calls)
    if not ids:
        return []
    return [{"name": "query_instance_subgraph", "label": label, "why": f"query graph values: {link.relation}",
             "args": _subgraph(kn_id, plan.answer_type, ids,
                               [Hop(relation=link.relation, direction=link.direction)])}
            for label, link in due.items()]


def next_calls(plan: QueryGraph, network: KnowledgeNetwork, kn_id: str,
               done: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The calls of the plan's next stage (``[]``: nothing left to run). Each is ``{"name", "args", "label",
    "why"}``; a stage whose call failed ends the plan (the error is in ``done``)."""
    calls = _by_label(done)
    if any(c.get("error") for c in calls.values()):
        return []
    out: list[dict[str, Any]] = []
    lc = plan.literal_constraint
    middle = _middle_type(plan, network)
    if plan.start_type and lc is not None and "qg:start" not in calls:
        return [{"name": "query_object_instance", "label": "qg:start", "why": f"query graph start: {plan.describe()}",
                 "args": {"kn_id": kn_id, "object_type": plan.start_type, "limit": LIMIT,
                          "condition": literal_condition(lc, _prop_type(network, plan.start_type, lc.relation))}}]
    if plan.start_type and "qg:path" not in calls:
        ids = [i["id"] for i in _instances_of(calls.get("qg:start"))]
        return [] if not ids else [{"name": "query_instance_subgraph", "label": "qg:path",
                                    "why": f"query graph: {plan.describe()}",
                                    "args": _subgraph(kn_id, plan.start_type, ids, plan.path)}]
    if not plan.topics and not plan.path and "qg:vpath" not in calls:
        start = _value_calls(plan, network, kn_id, calls)
        if start is not None:
            return start
    if plan.topics and "qg:path" not in calls:
        topic = plan.topics[0]
        out.append({"name": "query_instance_subgraph", "label": "qg:path", "why": f"query graph: {plan.describe()}",
                    "args": _subgraph(kn_id, topic.type, [_instance_id(topic.id, topic.type)], plan.path)})
        ec = plan.entity_constraint
        if ec is not None:
            out.append({"name": "query_instance_subgraph", "label": "qg:constraint",
                        "why": f"query graph constraint: {ec.topic.name}",
                        "args": _subgraph(kn_id, ec.topic.type, [_instance_id(ec.topic.id, ec.topic.type)],
                                          ec.path)})
        return out
    if plan.topics and middle and lc is not None and "qg:middle" not in calls:
        near = list(dict.fromkeys(n for n, _ in _last_links(calls.get("qg:path"))))
        condition = {"operation": "and", "sub_conditions": [
            {"operation": "in", "field": "id", "value": near},
            literal_condition(lc, _prop_type(network, middle, lc.relation))]}
        return [] if not near else [{"name": "query_object_instance", "label": "qg:middle",
                                     "why": f"query graph middle: {lc.text or lc.relation}",
                                     "args": {"kn_id": kn_id, "object_type": middle, "limit": LIMIT,
                                              "condition": condition}}]
    values = _value_calls(plan, network, kn_id, calls)
    if values is not None:
        return values
    if not _needs_final(plan, network) or "qg:final" in calls:
        return []
    parts: list[dict[str, Any]] = []
    if plan.topics or plan.path or "qg:vpath" in calls:
        ids = _kept(plan, network, calls, _answer_ids(plan, calls))[0]
        if not ids:
            return []
        parts.append({"operation": "in", "field": "id", "value": ids})
    if lc is not None and lc.on == "answer":
        parts.append(literal_condition(lc, _prop_type(network, plan.answer_type, lc.relation)))
    condition = (None if not parts else parts[0] if len(parts) == 1
                 else {"operation": "and", "sub_conditions": parts})
    args: dict[str, Any] = {"kn_id": kn_id, "object_type": plan.answer_type, "limit": LIMIT}
    if condition is not None:
        args["condition"] = condition
    agg = plan.aggregation
    if agg is not None and agg.op in ("argmax", "argmin"):
        order = {"order_by_links": {"relation_type": agg.relation, "direction": agg.direction}} if agg.counts \
            else {"order_by": agg.relation}
        args.update(order, order="desc" if agg.op == "argmax" else "asc", limit=min(LIMIT, max(TIES, agg.limit)))
    out.append({"name": "query_object_instance", "label": "qg:final", "why": f"query graph: {plan.describe()}",
                "args": args})
    if agg is not None and agg.op == "count":
        out.append({"name": "query_object_instance", "label": "qg:count", "why": "query graph: count",
                    "args": {**{k: v for k, v in args.items() if k != "limit"}, "count_only": True}})
    return out


def _display(network: KnowledgeNetwork) -> dict[str, str]:
    return {ot.id: ot.display_key for ot in network.object_types}


def _name(instance: Mapping[str, Any], keys: Mapping[str, str]) -> str:
    value = (instance.get("properties") or {}).get(keys.get(instance.get("object_type", ""), "name"))
    return str(value) if value not in (None, "") else str(instance.get("id", ""))


def _path_rows(call: Mapping[str, Any], keys: Mapping[str, str]) -> list[dict[str, Any]]:
    """One row per link of the subgraph's last step: the end reached and the instance it was reached from."""
    result = call.get("result") or {}
    nodes = result.get("nodes") or {}
    last = len(result.get("steps") or []) - 1
    rows = []
    for link in result.get("links") or []:
        if link["step"] != last:
            continue
        near, end = (link["source"], link["target"]) if link["forward"] else (link["target"], link["source"])
        rows.append({"value": _name(nodes.get(end, {"id": end}), keys), "value_instance": end, "instance": near,
                     "instance_name": _name(nodes.get(near, {"id": near}), keys), "via": link["relation_type"],
                     "direction": "out" if link["forward"] else "in"})
    return rows


def read_execution(plan: QueryGraph, network: KnowledgeNetwork, done: Sequence[Mapping[str, Any]]) -> NetworkExecution:
    """The answers and evidence of the plan's finished calls (see the module docstring)."""
    keys = _display(network)
    calls = _by_label(done)
    out = NetworkExecution()
    for label, call in calls.items():
        if call.get("error"):
            out.problems.append(f"{call.get('name')} ({label[3:]}) failed: {call['error']}")
        elif (call.get("result") or {}).get("truncated"):
            out.problems.append(f"the path was cut at {LIMIT} instances a step: the answer may be incomplete")
        elif label in ("qg:start", "qg:middle", "qg:vstart") and len(_instances_of(call)) >= LIMIT:
            out.problems.append(f"the middle was cut at {LIMIT} instances: the answer may be incomplete")
    if out.problems and any(c.get("error") for c in calls.values()):
        return out
    walked = calls.get("qg:path") or calls.get("qg:vpath")
    rows = _path_rows(walked, keys) if walked is not None else []
    ids = _answer_ids(plan, calls) if walked is not None else []
    ids, shown = _kept(plan, network, calls, ids)
    if shown:  # the value read on each answer's value node, beside its evidence (best first for a superlative)
        by_id: dict[str, list[dict[str, Any]]] = {}
        for r in rows:
            by_id.setdefault(r["value_instance"], []).append(r)
        lc_link, agg_link = _links(plan, network)
        shown_link = agg_link or lc_link
        rows = [{**r, "property": shown_link.relation if shown_link else "", "property_value": shown[i]}
                for i in ids for r in by_id.get(i, [])]
    middles = _middles(calls)
    lc = plan.literal_constraint
    if middles is not None and lc is not None:  # the middle constraint's value read beside each link it kept
        rows = [{**r, "property": lc.relation,
                 "property_value": (middles[r["instance"]].get("properties") or {}).get(lc.relation)}
                for r in rows if r["instance"] in middles]
    final = calls.get("qg:final")
    prop = (plan.aggregation.relation if plan.aggregation is not None and plan.aggregation.op != "count"
            else plan.literal_constraint.relation if plan.literal_constraint is not None else "")
    if final is not None:
        instances = list(((final.get("result") or {}).get("instances")) or [])
        agg = plan.aggregation
        counts = agg is not None and agg.counts

        def value(instance: Mapping[str, Any]) -> Any:
            return instance.get("links") if counts else (instance.get("properties") or {}).get(prop)

        if agg is not None and agg.op in ("argmax", "argmin") and instances:
            best = [i for i in instances if value(i) is not None]
            top = [value(i) for i in best[: agg.limit]]
            instances = [i for i in best if value(i) in top]
        values = {i["id"]: value(i) for i in instances}
        order = [i["id"] for i in instances]
        if walked is not None:
            by_end: dict[str, list[dict[str, Any]]] = {}
            for r in rows:
                by_end.setdefault(r["value_instance"], []).append(r)
            rows = [{**r, "property": prop, "property_value": values[i]} for i in order for r in by_end.get(i, [])]
        else:
            rows = [{"value": _name(i, keys), "value_instance": i["id"], "instance": i["id"],
                     "instance_name": _name(i, keys), "via": prop, "direction": "out", "property": prop,
                     "property_value": values[i["id"]]} for i in instances]
        ids = order
    else:
        allowed = set(ids)
        rows = [r for r in rows if r["value_instance"] in allowed]
    out.evidence = rows
    names = list(dict.fromkeys(r["value"] for r in rows))
    if plan.aggregation is not None and plan.aggregation.op == "count":
        counted = calls.get("qg:count")
        total = (counted.get("result") or {}).get("count") if counted is not None else None
        out.count = int(total) if isinstance(total, int) else len(dict.fromkeys(ids))
        out.answers = [str(out.count)]
    else:
        out.answers = names
    return out

"""The LLM-free planner: ranked schema intents + linked topic -> the next tool call.

    intents = resources.intent_planner("medical").rank(question, mask, ["Disease"])  # [("rel:has_symptom", 0.93), …]
    call = next_call(intents, candidates, network, "medical", tried=set(), prior={})

An intent label names one schema element (the labels of :mod:`kgrag.agent.training.cypher`):

- ``prop:<property>``    a data property of the topic (a Disease's ``cure_way``): ``query_object_instance``
- ``rel:<relation>``     instances reached from the topic along the relation: ``query_instance_subgraph`` out
- ``rel_in:<relation>``  instances the relation reaches the topic from (diseases with a symptom): … in
- ``path:<rel|rel_in>:<r1>|<rel|rel_in>:<r2>``  two steps through an unnamed (CVT) node (a person's films through
  their performances): ``query_instance_subgraph`` along both

Intents come from the planner ``KGRAG_AGENT_INTENT`` picks (:mod:`kgrag.agent.kn.intent_sources`): the ranker
trained on labelled questions when one fits the network, else the self-supervised one, else the zero-shot ranking
of the candidates that start at the topic's type (:mod:`kgrag.agent.kn.zero_shot`).
The planner walks the intents best first and plans the first one for which a topic of the right object type
was linked and that has not been tried; the tools node runs it and, when it finds nothing, the plan goes on
with the next intent (bounded by ``max_tool_calls``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kgrag.agent.kn.linking import InstanceMatch, choose_topic
from kgrag.agent.turn.state import ToolCall
from kgrag.network.schema.model import KnowledgeNetwork, ObjectType, RelationType

__all__ = ["Intent", "label_types", "next_call", "parse_label", "path_steps", "ranker_fits", "topic_type"]

Intent = tuple[str, float]
#: intents below this probability are not planned (the ranker's long tail)
MIN_PROBABILITY = 0.02


def parse_label(label: str) -> tuple[str, str]:
    """``"rel_in:has_symptom"`` -> ``("rel_in", "has_symptom")``; a two-step path through an unnamed (CVT) node,
    ``"path:rel:film.actor.film|rel:film.performance.film"`` -> ``("path", "rel:film.actor.film|rel:…")``."""
    kind, _, element = label.partition(":")
    if kind not in ("prop", "rel", "rel_in", "path") or not element:
        raise ValueError(f"not an intent label: {label!r}")
    if kind == "path":
        path_steps(label)  # validates every step
    return kind, element


def path_steps(label: str) -> list[tuple[str, str]]:
    """The ``(rel | rel_in, relation type)`` steps of an intent: one, or two for a ``path:`` label."""
    kind, _, element = label.partition(":")
    if kind != "path":
        return [(kind, element)]
    steps = [tuple(step.split(":", 1)) for step in element.split("|")]
    if len(steps) != 2 or any(len(st) != 2 or st[0] not in ("rel", "rel_in") or not st[1] for st in steps):
        raise ValueError(f"not an intent label: {label!r}")
    return [(st[0], st[1]) for st in steps]


def _relation(network: KnowledgeNetwork, rid: str) -> RelationType | None:
    return next((r for r in network.relation_types if r.id == rid), None)


def _owner(network: KnowledgeNetwork, prop: str) -> ObjectType | None:
    """The object type declaring data property ``prop`` (the first one, in declaration order)."""
    return next((ot for ot in network.object_types if any(p.name == prop for p in ot.data_properties)), None)


def topic_type(network: KnowledgeNetwork, label: str) -> str | None:
    """The object type the question's topic must have for this intent (None: the network lacks the element)."""
    return label_types(network, label)[0]


def _step_ends(network: KnowledgeNetwork, kind: str, rid: str) -> tuple[str, str] | None:
    rt = _relation(network, rid)
    if rt is None:
        return None
    ends = (rt.source_object_type_id, rt.target_object_type_id)
    return ends if kind == "rel" else (ends[1], ends[0])


def label_types(network: KnowledgeNetwork, label: str) -> tuple[str | None, str | None]:
    """``(topic type, answer type)`` of an intent (the answer type is None for a property; ``(None, None)`` when
    the network lacks the element or a path's steps do not meet)."""
    kind, element = parse_label(label)
    if kind == "prop":
        owner = _owner(network, element)
        return (owner.id if owner else None), None
    ends = [_step_ends(network, k, rid) for k, rid in path_steps(label)]
    if any(e is None for e in ends) or any(a[1] != b[0] for a, b in zip(ends, ends[1:], strict=False)):
        return None, None
    return ends[0][0], ends[-1][1]


def ranker_fits(labels: Iterable[str], network: KnowledgeNetwork) -> bool:
    """True when every label names an element of ``network`` (the ranker was trained on this schema)."""
    try:
        return all(topic_type(network, label) is not None for label in labels)
    except ValueError:
        return False


def _call(label: str, topic: InstanceMatch, network: KnowledgeNetwork, kn_id: str, why: str,
          limit: int) -> ToolCall:
    kind, element = parse_label(label)
    display = next((ot.display_key for ot in network.object_types if ot.id == topic.object_type), "name")
    condition = {"operation": "==", "field": display, "value": topic.name}
    if kind == "prop":
        args: dict[str, Any] = {"kn_id": kn_id, "object_type": topic.object_type, "condition": condition,
                                "properties": [display, element], "limit": 1}
        return ToolCall(name="query_object_instance", args=args, why=why)
    path = [{"relation_type": rid, "direction": "out" if k == "rel" else "in"} for k, rid in path_steps(label)]
    args = {"kn_id": kn_id, "start": {"object_type": topic.object_type, "condition": condition},
            "relation_type_path": path, "limit": limit}
    return ToolCall(name="query_instance_subgraph", args=args, why=why)


def next_call(intents: Sequence[Intent], candidates: Sequence[InstanceMatch], network: KnowledgeNetwork,
              kn_id: str, tried: set[str], prior: Mapping[str, int] | None = None,
              history_topic: InstanceMatch | None = None, limit: int = 200
              ) -> tuple[ToolCall, str, InstanceMatch] | None:
    """The first untried intent with a topic of its type: ``(call, label, topic)``, or None.

    When the question names stored instances verbatim (exact forms), the intents whose topic type is one of
    theirs come first, whatever their probability (the linked topic decides the family of questions: a named
    Symptom asks for ``rel_in:has_symptom``, not a Disease property); the others follow as fallbacks.
    ``history_topic`` (the thread's previous topic) stands in when the question links no topic of its own."""
    exact_types = {c.object_type for c in candidates if c.match_type == "exact"}
    fitting = {label for label, _ in intents if topic_type(network, label) in exact_types}
    ordered = sorted(intents, key=lambda intent: intent[0] not in fitting)  # stable: best first in each group
    for label, p in ordered:
        if label in tried or (p < MIN_PROBABILITY and label not in fitting):
            continue
        wanted = topic_type(network, label)
        if wanted is None:
            continue
        topic = choose_topic(candidates, wanted, prior)
        if topic is None and history_topic is not None and history_topic.object_type == wanted:
            topic = history_topic
        if topic is None:
            continue
        why = f"{label} (p={p:.2f}) on {topic.object_type} {topic.name!r} ({topic.match_type})"
        return _call(label, topic, network, kn_id, why, limit), label, topic
    return None

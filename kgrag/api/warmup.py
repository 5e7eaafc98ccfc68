"""Warm the agent before its first question: each prepared KG and each loaded network answers one question of its
own, in the background at server start, so every lazy load a question triggers (the triple graph, its linker and
reasoner, the question encoder, a network's planner, lexicon and other-name indexes) is paid before ``/healthz``
says warm — the first user question then costs what any later one does.

    warm_agent(graph, AgentContext, prepared_kgs(settings), kn_questions(store))  # {"kg:demo": {"seconds": …}, …}

The questions are the data's own: a KG's first held-out question (:func:`kgrag.prep.next_steps.sample_questions`),
a network's most common type's first instance named with one of its relations. They run LLM-free (no hosted LLM
is called at a server's start) and their answers are not kept.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from kgrag.config import Settings
from kgrag.network.service import ContextStore
from kgrag.prep.next_steps import sample_questions

log = logging.getLogger(__name__)

__all__ = ["kg_questions", "kn_questions", "warm_agent"]


def kg_questions(settings: Settings, kgs: list[str]) -> dict[str, str]:
    """One question per prepared KG of ``kgs`` (a KG with no prepared question gets its name: linking still runs)."""
    out = {}
    for kg in kgs:
        samples = sample_questions(settings.dataset_dir(kg), count=1)
        out[kg] = samples[0] if samples else kg
    return out


def kn_questions(store: ContextStore, kn_ids: list[str]) -> dict[str, str]:
    """One question per network: an instance of the type with the most instances, with a relation leaving that
    type (``"<name> <relation>"``), or the name alone when the type has none."""
    out = {}
    for kn_id in kn_ids:
        network = store.get_network(kn_id)
        names: dict[str, list[str]] = {}
        for type_id, _instance, name in store.instance_names(kn_id):
            if name:
                names.setdefault(type_id, []).append(name)
        if not names:
            continue
        type_id = max(names, key=lambda t: len(names[t]))
        relation = next((r.name for r in network.relation_types if r.source_object_type_id == type_id), "")
        out[kn_id] = f"{names[type_id][0]} {relation}".strip()
    return out


def warm_agent(graph: Any, context_type: Any, kg_asks: dict[str, str], kn_asks: dict[str, str]
               ) -> dict[str, dict[str, Any]]:
    """Run ``graph`` once per KG and per network on its question; returns seconds (or the error) per target. Never
    raises: a target that fails is reported and the others still warm."""
    report: dict[str, dict[str, Any]] = {}
    targets = [("kg", kg, q) for kg, q in kg_asks.items()] + [("kn_id", kn, q) for kn, q in kn_asks.items()]
    for field, target, question in targets:
        start = time.perf_counter()
        key = f"{'kg' if field == 'kg' else 'kn'}:{target}"
        try:
            # LLM-free: warming loads what lives in this process; a hosted LLM is not called at every start
            graph.invoke({"question": question, field: target}, context=context_type(use_llm=False))
            report[key] = {"question": question, "seconds": round(time.perf_counter() - start, 2)}
        except Exception as exc:  # noqa: BLE001 - warming is best effort: a cold target still answers, slower
            log.warning("warming the agent on %s failed: %s: %s", key, type(exc).__name__, exc)
            report[key] = {"question": question, "error": f"{type(exc).__name__}: {exc}"}
    return report

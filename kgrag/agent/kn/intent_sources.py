"""Which schema-intent planner answers for a network: ``KGRAG_AGENT_INTENT=auto|labelled|self|none``.

    planner = choose_planner("auto", labelled=None, learned=self_ranker, zero_shot=factory)
    planner.source            # "labelled" | "self" | "zero-shot"
    planner.rank("where was Jonas Okafor born?", "Jonas Okafor", ["Person"])

- ``labelled``: the intent ranker trained on labelled questions (:mod:`kgrag.agent.kn.intent`), when one whose
  labels all name this network's elements is trained; it ranks every label it knows — restricted, like every
  planner, to the labels that start at the linked topic's types when the question links one: a question about a
  Department ranks only the labels whose topic is a Department, and when the labelled ranker has none (it was never
  taught one) the zero-shot ranking of the candidates that start there answers instead (``儿科有哪些疾病`` follows
  the relation ending at the department, backwards — never a Disease relation of some other name).
- ``self``: the zero-shot ranking (:mod:`kgrag.agent.kn.zero_shot`) plus the self-supervised ranker's similarities
  (:mod:`kgrag.agent.kn.self_ranker`, trained by ``kgrag train-intent --kn ID --source self``).
- ``zero-shot``: the zero-shot ranking alone.

``auto`` takes the first of labelled, self, zero-shot that exists; ``labelled`` / ``self`` fall back to zero-shot
when theirs is not trained (``note`` says so, and the agent's trace shows it); ``none`` is zero-shot.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from kgrag.agent.kn.intent import label_topic_type

__all__ = ["IntentPlanner", "choose_planner"]

Intent = tuple[str, float]


@dataclass
class IntentPlanner:
    source: str  # "labelled" | "self" | "zero-shot"
    labelled: Any | None = None  # an IntentRanker
    ranker: Any | None = None  # a ZeroShotSchemaRanker (with the self-supervised ranker inside for "self")
    note: str = ""
    topic_prior: dict[str, int] = field(default_factory=dict)
    #: builds the zero-shot ranker the labelled planner falls back to for topic types it has no label for (lazily)
    fallback: Callable[[], Any] | None = None

    def rank(self, question: str, mask: str | None, topic_types: Iterable[str] | None, top: int = 8
             ) -> list[Intent]:
        """The best ``top`` intents ``(label, probability)``; ``mask``: the topic's words (the first stored name the
        question says), masked out; the ranked candidates start at ``topic_types`` (all of them when None / empty).
        The labelled ranker's labels are kept when their topic type is one of ``topic_types`` (renormalised); when
        none is, the zero-shot ranking of those types answers."""
        types = list(dict.fromkeys(topic_types or ()))
        if self.labelled is None:
            return self.ranker.rank(question, mask, types, top)
        ranked = [(label, float(p)) for label, p in self.labelled.rank(question, mask)]
        if not types:
            return ranked[:top]
        kept = [(label, p) for label, p in ranked if label_topic_type(label) in types]
        total = sum(p for _, p in kept)
        if kept and total > 0:
            return [(label, p / total) for label, p in kept[:top]]
        if self.ranker is None and self.fallback is not None:
            self.ranker = self.fallback()
        return self.ranker.rank(question, mask, types, top) if self.ranker is not None else []


def choose_planner(mode: str, labelled: Any | None, learned: Any | None,
                   zero_shot: Callable[[Any | None], Any]) -> IntentPlanner:
    """The planner for ``mode`` given what is trained (``zero_shot(learned)`` builds the zero-shot ranker)."""
    if mode in ("auto", "labelled") and labelled is not None:
        return IntentPlanner("labelled", labelled=labelled, topic_prior=dict(labelled.topic_prior or {}),
                             fallback=lambda: zero_shot(None))
    if mode in ("auto", "self") and learned is not None:
        return IntentPlanner("self", ranker=zero_shot(learned))
    note = ""
    if mode == "labelled":
        note = "no ranker trained on labelled questions fits this network: zero-shot ranking"
    elif mode == "self":
        note = ("no self-supervised ranker is trained for this network (kgrag train-intent --kn ID --source self): "
                "zero-shot ranking")
    return IntentPlanner("zero-shot", ranker=zero_shot(None), note=note)

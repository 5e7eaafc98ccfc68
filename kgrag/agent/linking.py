"""Topic linking: which stored instance a question is about, as contextual recall's storage forms (the stored name,
not the user's spelling).

    candidates = topic_candidates(question, lexicon)           # exact stored names in the question, in order
    candidates += storage_form_candidates(store, "medical", ["前列腺"], [disease_type], recalled={"Disease"})

1. **Exact forms**: every maximal span of the question that is a stored instance name (a name inside a longer
   stored name found at the same place does not count: 细菌性阴道炎, not 阴道炎), in the order they appear. The
   scan is a dictionary lookup per substring up to the longest stored name (≈ 1,000 lookups for a 50-character
   question), no SQL.
2. **Contains / fuzzy forms** (only when the question holds no stored name of the wanted type): contextual
   recall's storage-form search (:func:`kgrag.search.storage_forms.map_keyword`) for the question's entity
   keywords, restricted to the wanted object type (手足口 -> 手足口病).

:func:`choose_topic` takes the first exact form of the wanted type (users name what they ask about first);
among contains/fuzzy forms the most similar, ties broken by how often a stored name was the topic of training
questions (``prior``) — a count learned from the training split, not a rule per question.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from kgrag.network.model import ObjectType
from kgrag.search.context_models import ContextConfig
from kgrag.search.keywords import Lexicon

__all__ = ["TopicCandidate", "choose_topic", "storage_form_candidates", "topic_candidates"]


@dataclass(frozen=True)
class TopicCandidate:
    name: str  # the stored name
    object_type: str
    instance_id: str
    match_type: Literal["exact", "contains", "fuzzy", "history"]
    keyword: str  # the user's words it was found from
    start: int = -1  # where the keyword starts in the question (-1: not a span of it)
    similarity: float = 1.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def topic_candidates(question: str, lexicon: Lexicon) -> list[TopicCandidate]:
    """Exact storage forms: maximal spans of ``question`` that are stored names, by position (then longer first)."""
    names = lexicon.names
    longest = lexicon.max_name_length
    spans: list[tuple[int, int]] = []
    n = len(question)
    for i in range(n):
        for j in range(min(n, i + longest), i + 1, -1):  # longest first: the first hit at i is maximal at i
            if question[i:j] in names:
                spans.append((i, j))
                break
    maximal = [(i, j) for i, j in spans if not any(a <= i and j <= b and (a, b) != (i, j) for a, b in spans)]
    out: list[TopicCandidate] = []
    for i, j in maximal:
        text = question[i:j]
        for type_id, instance_id in names[text]:
            out.append(TopicCandidate(text, type_id, instance_id, "exact", text, i))
    return out


def storage_form_candidates(store: Any, kn_id: str, keywords: Sequence[str], object_types: Sequence[ObjectType],
                            config: ContextConfig | None = None) -> list[TopicCandidate]:
    """Contains/fuzzy storage forms of ``keywords`` among ``object_types`` (contextual recall's search)."""
    from kgrag.search.storage_forms import map_keyword

    config = config or ContextConfig()
    wanted = {ot.id for ot in object_types}
    out: list[TopicCandidate] = []
    for keyword in keywords:
        for mapping in map_keyword(store, kn_id, keyword, list(object_types), config, wanted, set(), set()):
            for form in mapping.storage_forms:
                if mapping.object_type_id in wanted:
                    out.append(TopicCandidate(form.sample_instance_name, mapping.object_type_id,
                                              form.sample_instance_id, form.match_type, keyword, -1,
                                              float(form.similarity)))
    return out


def choose_topic(candidates: Sequence[TopicCandidate], object_type: str,
                 prior: Mapping[str, int] | None = None) -> TopicCandidate | None:
    """The topic of type ``object_type``: the first exact form, else the best contains/fuzzy form."""
    typed = [c for c in candidates if c.object_type == object_type]
    exact = sorted((c for c in typed if c.match_type == "exact"), key=lambda c: (c.start, -len(c.name)))
    if exact:
        return exact[0]
    prior = prior or {}
    rank = {"contains": 1.0, "fuzzy": 0.0}

    def score(c: TopicCandidate) -> tuple[float, float]:
        return (rank.get(c.match_type, -1.0) + c.similarity, math.log1p(prior.get(c.name, 0)))

    rest = [c for c in typed if c.match_type in rank]
    return max(rest, key=score) if rest else None

"""Topic linking: which stored instance a question is about, as contextual recall's storage forms (the stored name,
not the user's spelling).

    candidates = exact_matches(question, lexicon)              # exact stored names in the question, in order
    candidates += storage_form_candidates(store, "medical", ["前列腺"], [disease_type], recalled={"Disease"})

1. **Exact forms**: every maximal span of the question that is a stored instance name (a name inside a longer
   stored name found at the same place does not count: 细菌性阴道炎, not 阴道炎), in the order they appear; an
   English name also when said in another case or in the plural (``film directors`` -> ``Film Director``), or by
   one of its words where no whole name is said (a surname: ``orwell's`` -> ``George Orwell``). The
   scan is a dictionary lookup per substring up to the longest stored name (≈ 1,000 lookups for a 50-character
   question), no SQL.
2. **Contains forms** (only when the question holds no stored name of the wanted type): the stored names of that
   type containing the longest substring (2+ characters, not a schema or question word, ≥ 30 % of the name) of
   the question that any of them contains
   (手足口 -> 手足口病; 前列腺 -> 前列腺炎 / 前列腺增生 / …), found through a character-bigram index.
3. **Fuzzy forms** (none of the above): contextual recall's storage-form search
   (:func:`kgrag.search.storage_forms.map_keyword`) for the question's entity keywords (红斑狼仓 -> 红斑狼疮).

:func:`choose_topic` takes the first exact form of the wanted type (users name what they ask about first: on the
CE-Prompt questions the first maximal span is the Cypher's topic 96.9 % of the time, the longest 96.0 %); else an
other-name form (a recorded alias, a validated standard-name rewrite, a learned contraction: the closest);
among contains forms the one most often the topic of training questions (``prior``, counts learned from the
training split), then the shortest; among fuzzy forms (embedding, segment and one-substitution matches) the most
similar.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from kgrag.network.schema.model import ObjectType
from kgrag.search.context_models import ContextConfig
from kgrag.search.keywords import STOPWORDS, Lexicon
from kgrag.search.storage_forms import map_keyword

__all__ = ["InstanceMatch", "choose_topic", "contains_candidates", "exact_matches", "storage_form_candidates"]


@dataclass(frozen=True)
class InstanceMatch:
    """Words of the question matched to a stored network instance, and how (one of the candidates the topic is
    chosen from; its KG counterpart is :class:`kgrag.agent.kg.triple_kg.EntityMatch`, what the network planner
    starts from :class:`kgrag.query_graph.network_planner.NetworkTopic`)."""

    name: str  # the stored name
    object_type: str
    instance_id: str
    match_type: Literal["exact", "alias", "standard_name", "abbreviation", "contains", "fuzzy", "segments", "ngram",
                        "history"]
    keyword: str  # the user's words it was found from
    start: int = -1  # where the keyword starts in the question (-1: not a span of it)
    similarity: float = 1.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def exact_matches(question: str, lexicon: Lexicon) -> list[InstanceMatch]:
    """Exact storage forms: maximal spans of ``question`` that are stored names, by position (then longer first)."""
    names = lexicon.names
    maximal = lexicon.name_spans(question)
    out: list[InstanceMatch] = []
    for i, j in maximal:
        text = question[i:j]
        for type_id, instance_id in names[text]:
            out.append(InstanceMatch(text, type_id, instance_id, "exact", text, i))
    # English names said in another case or in the plural, where no exact span covers them
    folded = lexicon.folded_spans(question)
    for i, j, stored in folded:
        if not any(a < j and i < b for a, b in maximal):
            for type_id, instance_id in names[stored]:
                out.append(InstanceMatch(stored, type_id, instance_id, "exact", question[i:j], i))
    # a surname or a word of a longer English name ("Orwell's" -> George Orwell), where no name covers it
    covered = [*maximal, *((i, j) for i, j, _ in folded)]
    for i, j, stored in lexicon.partial_spans(question):
        if not any(a < j and i < b for a, b in covered):
            for type_id, instance_id in names[stored]:
                out.append(InstanceMatch(stored, type_id, instance_id, "exact", question[i:j], i))
    out.sort(key=lambda c: c.start)
    return out


#: (object type, id of the lexicon) -> (the lexicon, its names by bigram); the lexicon is kept and compared by
#: identity, so an index is never served for another lexicon that reuses a freed id
_bigram_index: dict[tuple[str, int], tuple[Lexicon, dict[str, list[str]]]] = {}


def _names_by_bigram(lexicon: Lexicon, object_type: str) -> dict[str, list[str]]:
    """Stored names of ``object_type`` by each character bigram they contain (built once per lexicon)."""
    key = (object_type, id(lexicon))
    entry = _bigram_index.get(key)
    if entry is not None and entry[0] is lexicon:
        return entry[1]
    if len(_bigram_index) > 32:
        _bigram_index.clear()
    index: dict[str, list[str]] = {}
    for name, owners in lexicon.names.items():
        if any(t == object_type for t, _ in owners):
            for gram in {name[i : i + 2] for i in range(len(name) - 1)}:
                index.setdefault(gram, []).append(name)
    _bigram_index[key] = (lexicon, index)
    return index


#: a contains form must cover at least this share of the stored name (前列腺 in 前列腺炎, not 炎 in 前列腺炎)
MIN_CONTAINED = 0.3


def _schema_word(text: str, lexicon: Lexicon) -> bool:
    """Words that say what is asked, not about what: relation / type words and question words (症状, 治疗, 什么)."""
    return (text in STOPWORDS or text in lexicon.type_words
            or any(text in word for word in lexicon.relation_words if len(word) >= len(text)))


def contains_candidates(question: str, lexicon: Lexicon, object_type: str, max_length: int = 8
                        ) -> list[InstanceMatch]:
    """Contains forms: stored names of ``object_type`` holding the longest question substring any name holds."""
    index = _names_by_bigram(lexicon, object_type)
    text = "".join(ch for ch in question if not ch.isspace())
    for length in range(min(len(text), max_length), 1, -1):
        found: dict[str, tuple[str, int]] = {}
        for i in range(len(text) - length + 1):
            sub = text[i : i + length]
            if _schema_word(sub, lexicon):
                continue
            for name in index.get(sub[:2], ()):
                if sub in name and name not in found and len(sub) >= MIN_CONTAINED * len(name):
                    found[name] = (sub, i)
        if found:
            return [InstanceMatch(name, object_type, next(iid for t, iid in lexicon.names[name] if t == object_type),
                                   "contains", sub, -1, len(sub) / len(name))
                    for name, (sub, i) in found.items()]
    return []


def storage_form_candidates(store: Any, kn_id: str, keywords: Sequence[str], object_types: Sequence[ObjectType],
                            config: ContextConfig | None = None) -> list[InstanceMatch]:
    """Contains/fuzzy storage forms of ``keywords`` among ``object_types`` (contextual recall's search)."""
    config = config or ContextConfig()
    wanted = {ot.id for ot in object_types}
    out: list[InstanceMatch] = []
    for keyword in keywords:
        for mapping in map_keyword(store, kn_id, keyword, list(object_types), config, wanted, set(), set()):
            for form in mapping.storage_forms:
                if mapping.object_type_id in wanted:
                    out.append(InstanceMatch(form.sample_instance_name, mapping.object_type_id,
                                              form.sample_instance_id, form.match_type, keyword, -1,
                                              float(form.similarity)))
    return out


def choose_topic(candidates: Sequence[InstanceMatch], object_type: str,
                 prior: Mapping[str, int] | None = None) -> InstanceMatch | None:
    """The topic of type ``object_type``: the first exact form, else the closest alias form (the keyword is a
    name the instance records, e.g. 心梗), else the best contains/fuzzy form."""
    typed = [c for c in candidates if c.object_type == object_type]
    exact = sorted((c for c in typed if c.match_type == "exact"), key=lambda c: (c.start, -len(c.name)))
    if exact:
        return exact[0]
    # the keyword is a recorded other name of it, the standard name a validated rewrite gave, or a contraction of
    # its name learned from the recorded ones
    for kind in ("alias", "standard_name", "abbreviation"):
        named = [c for c in typed if c.match_type == kind]
        if named:
            return max(named, key=lambda c: c.similarity)
    prior = prior or {}
    contains = [c for c in typed if c.match_type == "contains"]
    if contains:
        return max(contains, key=lambda c: (math.log1p(prior.get(c.name, 0)), -len(c.name)))
    fuzzy = [c for c in typed if c.match_type in ("fuzzy", "segments", "ngram")]
    return max(fuzzy, key=lambda c: (c.similarity, math.log1p(prior.get(c.name, 0)))) if fuzzy else None

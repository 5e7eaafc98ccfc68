"""The schema elements a question about a topic can ask for, read from the network itself (no labels, no rules).

    profile = network_profile(store, "demo")                 # built once per network version
    cands = profile.for_types({"Person"})                    # what a Person question can be answered with

A candidate is one intent label of :mod:`kgrag.agent.kn.planner` whose topic type is known:

- ``prop:<p>`` for every data property of the type but its display key (the answer: the topic's value of ``p``);
- ``rel:<r>`` for every relation type **starting** at the type (the answer: the relation's target type);
- ``rel_in:<r>`` for every relation type **ending** at the type (the answer: its source type);
- ``path:<step>|<step>`` for two such steps through an unnamed node type (a CVT: :func:`unnamed_types`), e.g. a
  person's films through their performances (a single step into such a type is no candidate: its answers are
  unnamed nodes).

Each candidate carries what a question is matched against, all taken from the schema and the data:

- ``text``: the element's id words (``people.person.place_of_birth`` -> ``people person place of birth``), name,
  display name and comment, and the answer type's name and comment;
- ``answer_text``: only what says what the answer *is* (the answer type or the property);
- ``kinds`` (:func:`value_kinds`): the share of a few stored values of the answer (instance names of the answer
  type, or property values) that read as a year or date, and as a number — what "when" and
  "how many" questions are matched against.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kgrag.network.schema.model import KnowledgeNetwork
from kgrag.rank.tokenize import has_cjk

__all__ = ["CandidateProfile", "SchemaCandidate", "id_words", "network_profile", "value_kinds"]

#: stored values read per answer (instance names of the answer type, property values of the topic type)
SAMPLES = 24
_YEAR = re.compile(r"^\s*(1[0-9]{3}|20[0-9]{2})\s*$")
_DATE = re.compile(r"^\s*\d{4}[-/.年]\d{1,2}([-/.月]\d{1,2}日?)?\s*$|^\s*\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4}\s*$")
_NUMBER = re.compile(r"^\s*[-+]?\d+([.,]\d+)?\s*(%|％)?\s*$")
_TIME_TYPES = {"date", "datetime", "timestamp", "time", "year"}
_NUMBER_TYPES = {"integer", "int", "long", "short", "float", "double", "decimal", "number", "numeric"}


def id_words(identifier: str) -> str:
    """An id as words: separators and camelCase split (``film.film.directed_by@Film`` -> ``film film directed by
    Film``)."""
    text = re.sub(r"([a-z])([A-Z])", r"\1 \2", identifier)
    return " ".join(re.split(r"[._@/:>\-\s]+", text)).strip()


#: a value longer than this many characters is a passage of text, not an answer value
LONG_TEXT = 40


def value_kinds(values: Iterable[Any], declared_type: str = "") -> dict[str, float]:
    """``{"time", "number", "long_text"}``: the share of ``values`` that read as a year/date, as a number and
    as a passage (longer than :data:`LONG_TEXT` characters); a declared date or number type counts fully."""
    t = declared_type.lower()
    if t in _TIME_TYPES:
        return {"time": 1.0, "number": 0.0, "long_text": 0.0}
    vals = [str(v) for v in values if v not in (None, "")][:SAMPLES]
    if not vals:
        return {"time": 0.0, "number": 1.0 if t in _NUMBER_TYPES else 0.0, "long_text": 0.0}
    time = sum(bool(_YEAR.match(v) or _DATE.match(v)) for v in vals) / len(vals)
    number = sum(bool(_NUMBER.match(v)) for v in vals) / len(vals)
    if t in _NUMBER_TYPES:
        number = 1.0
    long_text = sum(len(v) > LONG_TEXT for v in vals) / len(vals)
    return {"time": time, "number": max(0.0, number - time), "long_text": long_text}


@dataclass(frozen=True)
class SchemaCandidate:
    label: str
    topic_type: str
    answer_type: str  # the object type the answer instances have ("" for a property)
    name: str  # the element's own words (name / display name)
    text: str  # everything said about it (what BM25 reads)
    answer_text: str  # what the answer is: the answer type's "name comment" (the text the store embedded)
    element_text: str  # the element's "name comment" (for a relation type: the text the store embedded)
    via_text: str = ""  # a path's first step's "name comment" (empty for one step)
    #: short phrases naming it (name, display name, id words, comment fragments): what synthetic questions say
    phrases: tuple[str, ...] = ()
    kinds: dict[str, float] = field(default_factory=dict, hash=False, compare=False)


@dataclass
class CandidateProfile:
    """Every candidate of a network, by topic type (see the module docstring)."""

    kn_id: str
    version: str
    candidates: list[SchemaCandidate]
    by_type: dict[str, list[int]]
    type_names: dict[str, str]
    #: most candidate texts hold Chinese: the schema's language (question frames, prototype words)
    chinese: bool = False

    def for_types(self, types: Iterable[str] | None) -> list[int]:
        """Indices of the candidates whose topic type is one of ``types`` (all when ``types`` is None/empty)."""
        wanted = list(dict.fromkeys(types or ()))
        if not wanted:
            return list(range(len(self.candidates)))
        return [i for t in wanted for i in self.by_type.get(t, ())]


_FRAGMENT = re.compile(r"[,，、;；。:：()（）\[\]{}…/|]+|\.\.\.")


def phrases_of(*texts: str, limit: int = 6) -> tuple[str, ...]:
    """Distinct short phrases of ``texts`` (each cut at punctuation; 1–6 words or 2–12 characters)."""
    out: list[str] = []
    for text in texts:
        for piece in _FRAGMENT.split(text or ""):
            piece = " ".join(piece.split()).strip(" .")
            size = len(piece.split()) if piece.isascii() else len(piece)
            if piece and (1 <= size <= 6 if piece.isascii() else 2 <= size <= 12):
                out.append(piece)
    return tuple(dict.fromkeys(out))[:limit]


def _type_text(network: KnowledgeNetwork, type_id: str) -> str:
    """A type's ``name comment`` — the string the store embedded for it (so its vector comes from the cache)."""
    ot = next((o for o in network.object_types if o.id == type_id), None)
    if ot is None:
        return id_words(type_id)
    return f"{ot.name} {ot.comment}".strip() or ot.id


def _samples_by_type(names: Sequence[tuple[str, str, str]]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = defaultdict(list)
    for type_id, _iid, name in names:
        bucket = out[type_id]
        if len(bucket) < SAMPLES and name:
            bucket.append(str(name))
    return out


def _property_samples(store: Any, kn_id: str, type_id: str, props: Sequence[str]) -> dict[str, list[str]]:
    """Up to :data:`SAMPLES` values of each of ``props`` among the type's first instances."""
    out: dict[str, list[str]] = {p: [] for p in props}
    if not props:
        return out
    for hit in store.query_instances(kn_id, type_id, None, SAMPLES * 2):
        for p in props:
            value = hit.properties.get(p)
            items = value if isinstance(value, list) else [value]
            for v in items:
                if v not in (None, "") and len(out[p]) < SAMPLES:
                    out[p].append(str(v)[:LONG_TEXT + 20])
    return out


def build_profile(network: KnowledgeNetwork, names: Sequence[tuple[str, str, str]], store: Any | None = None,
                  version: str = "") -> CandidateProfile:
    """The candidates of ``network`` (``names``: ``(type, id, display name)`` of its instances; ``store``: where
    property values are sampled, None = no samples)."""
    kinds_of_type = {type_id: value_kinds(vals) for type_id, vals in _samples_by_type(names).items()}
    type_text = {ot.id: _type_text(network, ot.id) for ot in network.object_types}
    candidates: list[SchemaCandidate] = []
    for ot in network.object_types:
        props = [p for p in ot.data_properties if p.name != ot.display_key]
        values = _property_samples(store, network.kn_id, ot.id, [p.name for p in props]) if store else {}
        for p in props:
            words = " ".join(dict.fromkeys(w for w in (p.display_name, id_words(p.name)) if w))
            vals = values.get(p.name, [])
            own = f"{words} {p.comment}".strip()
            candidates.append(SchemaCandidate(
                label=f"prop:{p.name}", topic_type=ot.id, answer_type="", name=words,
                text=own, answer_text=own, element_text=own,
                phrases=phrases_of(p.display_name, id_words(p.name), p.comment),
                kinds=value_kinds(vals, p.type)))
    for rt in network.relation_types:
        words = " ".join(dict.fromkeys(w for w in (rt.name, id_words(rt.id)) if w))
        for label, topic, answer in ((f"rel:{rt.id}", rt.source_object_type_id, rt.target_object_type_id),
                                     (f"rel_in:{rt.id}", rt.target_object_type_id, rt.source_object_type_id)):
            answer_text = type_text.get(answer, id_words(answer))
            answer_words = id_words(answer) if id_words(answer).lower() not in answer_text.lower() else ""
            candidates.append(SchemaCandidate(
                label=label, topic_type=topic, answer_type=answer, name=words,
                text=f"{words} {rt.comment} {answer_text} {answer_words}".strip(), answer_text=answer_text,
                element_text=f"{rt.name} {rt.comment}".strip() or rt.id,
                kinds=kinds_of_type.get(answer) or value_kinds([]),
                phrases=phrases_of(rt.name, id_words(rt.id.split("@")[0].rsplit(".", 1)[-1]), rt.comment)))
    cvt = unnamed_types(network, names)
    # a step into an unnamed node answers nothing a person asks for ("Performance m.0x1"): its paths do instead
    candidates = [c for c in candidates if c.answer_type not in cvt] + _cvt_paths(network, candidates, cvt)
    by_type: dict[str, list[int]] = defaultdict(list)
    for i, c in enumerate(candidates):
        by_type[c.topic_type].append(i)
    type_names = {ot.id: ot.name or ot.id for ot in network.object_types}
    chinese = sum(has_cjk(c.text) for c in candidates) * 2 > max(len(candidates), 1)
    return CandidateProfile(network.kn_id, version, candidates, dict(by_type), type_names, chinese)


#: a type is an unnamed (CVT) node type when at least this share of its instances has no name of its own
UNNAMED_SHARE = 0.8


def unnamed_types(network: KnowledgeNetwork, names: Sequence[tuple[str, str, str]]) -> set[str]:
    """Object types whose instances are unnamed nodes (Freebase's CVTs: a performance, a marriage): the name is
    empty, the instance id, or the type's id/name followed by the id (``Performance m.0x1``)."""
    total: dict[str, int] = defaultdict(int)
    blank: dict[str, int] = defaultdict(int)
    labels = {ot.id: {ot.id.lower(), ot.name.lower()} for ot in network.object_types}
    for type_id, iid, name in names:
        total[type_id] += 1
        text = str(name or "").strip().lower()
        head = text.split(" ", 1)[0]
        blank[type_id] += not text or text == iid.lower() or (head in labels.get(type_id, ()) and iid.lower() in text)
    return {t for t, n in total.items() if n and blank[t] >= UNNAMED_SHARE * n}


def _cvt_paths(network: KnowledgeNetwork, candidates: Sequence[SchemaCandidate], cvt: set[str]
               ) -> list[SchemaCandidate]:
    """Two-step candidates through an unnamed node type: topic -r1-> CVT -r2-> answer (the answer neither the CVT
    type nor reached back through r1)."""
    if not cvt:
        return []
    steps = [c for c in candidates if not c.label.startswith("prop:")]
    into = [c for c in steps if c.answer_type in cvt and c.topic_type not in cvt]
    out_of: dict[str, list[SchemaCandidate]] = defaultdict(list)
    for c in steps:
        if c.topic_type in cvt and c.answer_type not in cvt:
            out_of[c.topic_type].append(c)
    paths = []
    for first in into:
        for second in out_of.get(first.answer_type, ()):
            if second.label.split(":", 1)[1] == first.label.split(":", 1)[1]:
                continue  # back along the same relation
            paths.append(SchemaCandidate(
                label=f"path:{first.label}|{second.label}", topic_type=first.topic_type,
                answer_type=second.answer_type, name=f"{first.name} {second.name}",
                text=f"{first.name} {second.text}", answer_text=second.answer_text,
                element_text=second.element_text, via_text=first.element_text,
                phrases=tuple(dict.fromkeys([*second.phrases, *first.phrases]))[:6], kinds=second.kinds))
    return paths


_profiles: dict[str, CandidateProfile] = {}


def network_profile(store: Any, kn_id: str) -> CandidateProfile:
    """The candidates of the stored network ``kn_id``, rebuilt when its version changes (one per process)."""
    version = store.network_version(kn_id)
    cached = _profiles.get(kn_id)
    if cached is not None and cached.version == version:
        return cached
    profile = build_profile(store.get_network(kn_id), store.instance_names(kn_id), store, version)
    if len(_profiles) > 16:
        _profiles.clear()
    _profiles[kn_id] = profile
    return profile

"""Other names the data does not record: for a user's word, the stored names of one object type it likely stands
for, by contraction (慢支 -> 慢性支气管炎), composition with a known other name (隐匿型冠心病 -> 隐匿型 +
冠心病's stored name), a learned segment substitution (霉菌性关节炎 -> 真菌性关节炎), segments in order (窦房阻滞
-> 窦房传导阻滞) or one edited character (红斑狼仓 -> 红斑狼疮).

    index = OtherNameIndex.build([("d1", "慢性支气管炎"), ("d2", "心肌梗死")], [("心肌梗死", "心梗")])
    index.lookup("慢支")  # [OtherName(position=0, match_type='abbreviation', similarity=…, via='慢支')]

Contract:

* :meth:`OtherNameIndex.build` takes one type's ``(instance id, stored name)`` pairs and the ``(stored name,
  other name)`` pairs the type records (its alias property). From the pairs it learns a
  :class:`kgrag.search.contraction.ContractionModel` and indexes every stored name's likeliest contractions
  (:data:`CONTRACTIONS_PER_NAME`, probability ≥ :data:`MIN_CONTRACTION_P`), and *rewrites*: a recorded other name,
  or an indexed contraction of a single stored name, stands for its stored name inside a longer word (the seam
  written once: 原醛 + 症 -> 原发性醛固酮增多症); and the differing middle of recorded pairs (same start and end,
  middles of at most :data:`MAX_REWRITE_CHARS` characters and 2+ characters in common, seen in at least
  :data:`MIN_SUBSTITUTION_PAIRS` pairs: 综合症 / 综合征) may be substituted once. With no recorded pairs only the
  segment and one-edit strategies work.
* :meth:`OtherNameIndex.lookup` (names compared folded: :func:`kgrag.search.name_ngrams.fold`; the word's own
  stored name, when it has one, is never returned) gives, best first within each match type:

  - ``abbreviation`` — the word is an indexed contraction of the name (similarity ``0.6 + 0.35 × p / best p``
    of the names sharing that contraction), or one rewrite of a part of the word through a recorded other name or
    a contraction gives the name (0.9) or a name one substituted or inserted character from it (0.8; never a
    deleted one);
  - ``segments`` — a learned substitution gives the name (0.85) or one substitution or insertion from it (0.75); or the word's segments
    occur in order in the name with a gap (:class:`kgrag.search.name_segments.SegmentIndex`; its score × 0.9);
  - ``ngram`` — the name is one substituted character from the word (:class:`kgrag.search.name_ngrams.NgramIndex`;
    ``1 - 1 / length``).

  A name found by several strategies keeps its highest similarity; at most ``limit`` results, by similarity.
* :func:`other_name_index` builds the index of one type of a network from a
  :class:`kgrag.network.service.ContextStore` and keeps it per (network, version, type); a type whose name
  field is not its display key has no index (None).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from kgrag.network.schema.model import ObjectType
from kgrag.network.service import ContextStore
from kgrag.search.contraction import ContractionModel
from kgrag.search.name_ngrams import NgramIndex, fold
from kgrag.search.name_segments import SegmentIndex

__all__ = ["CONTRACTIONS_PER_NAME", "MAX_REWRITE_CHARS", "MIN_CONTRACTION_P", "MIN_SUBSTITUTION_PAIRS", "OtherName", "OtherNameIndex",
           "OtherNameType", "other_name_index"]

OtherNameType = Literal["abbreviation", "segments", "ngram"]
#: contractions indexed per stored name
CONTRACTIONS_PER_NAME = 10
#: the least probability (given that the name is contracted) of an indexed contraction
MIN_CONTRACTION_P = 0.005
#: the longest differing middle of a learned substitution
MAX_REWRITE_CHARS = 3
#: the fewest recorded pairs a substitution must be seen in
MIN_SUBSTITUTION_PAIRS = 2
#: the shortest word part a recorded other name or contraction replaces
_MIN_PART = 2
#: rewrites tried per word
_MAX_REWRITES = 40


def _seam(replacement: str, rest: str) -> str:
    """``replacement + rest`` with the longest end of ``replacement`` that ``rest`` starts with written once
    (原醛 -> 原发性醛固酮增多症, then 症: 原发性醛固酮增多症)."""
    for k in range(min(len(replacement), len(rest)), 0, -1):
        if replacement.endswith(rest[:k]):
            return replacement + rest[k:]
    return replacement + rest


@dataclass(frozen=True)
class OtherName:
    """A stored name (``position`` in the index's names) the word may stand for, how, and through what."""

    position: int
    match_type: OtherNameType
    similarity: float
    via: str = ""


def _substitutions(pairs: Iterable[tuple[str, str]]) -> dict[str, set[str]]:
    """Learned substitutions ``other-name middle -> stored-name middle`` from pairs that differ in the middle,
    those seen in at least :data:`MIN_SUBSTITUTION_PAIRS` pairs."""
    counts: Counter[tuple[str, str]] = Counter()
    for name, alias in pairs:
        a, b = fold(alias), fold(name)
        i = 0
        while i < min(len(a), len(b)) and a[i] == b[i]:
            i += 1
        j = 0
        while j < min(len(a), len(b)) - i and a[-1 - j] == b[-1 - j]:
            j += 1
        left, right = a[i:len(a) - j], b[i:len(b) - j]
        if i + j >= 2 and left and right and len(left) <= MAX_REWRITE_CHARS and len(right) <= MAX_REWRITE_CHARS:
            counts[(left, right)] += 1
    out: dict[str, set[str]] = {}
    for (left, right), n in counts.items():
        if n >= MIN_SUBSTITUTION_PAIRS:
            out.setdefault(left, set()).add(right)
    return out


@dataclass
class OtherNameIndex:
    """The indexes of one object type's stored names (see the module docstring)."""

    ids: list[str]
    names: list[str]
    by_fold: dict[str, list[int]] = field(default_factory=dict)
    by_id: dict[str, int] = field(default_factory=dict)
    #: folded contraction -> (name position, probability), best first
    contractions: dict[str, list[tuple[int, float]]] = field(default_factory=dict)
    #: folded other name (recorded or contraction) -> folded stored names it stands for
    expansions: dict[str, set[str]] = field(default_factory=dict)
    #: learned substitutions: folded middle -> folded middles
    substitutions: dict[str, set[str]] = field(default_factory=dict)
    ngrams: NgramIndex | None = None
    segments: SegmentIndex | None = None

    @classmethod
    def build(cls, instances: Sequence[tuple[str, str]], recorded: Sequence[tuple[str, str]]) -> OtherNameIndex:
        index = cls(ids=[i for i, _ in instances], names=[n for _, n in instances])
        for pos, name in enumerate(index.names):
            index.by_fold.setdefault(fold(name), []).append(pos)
        index.by_id = {iid: pos for pos, iid in enumerate(index.ids)}
        index.ngrams = NgramIndex(index.names)
        index.segments = SegmentIndex(index.names)
        stored = set(index.by_fold)
        for name, alias in recorded:
            if fold(name) in stored and len(fold(alias)) >= _MIN_PART:
                index.expansions.setdefault(fold(alias), set()).add(fold(name))
        index.substitutions = _substitutions(recorded)
        model = ContractionModel.learn(recorded)
        for pos, name in enumerate(index.names):
            for short, p in model.contractions(name, CONTRACTIONS_PER_NAME, MIN_CONTRACTION_P):
                if short not in stored:
                    index.contractions.setdefault(short, []).append((pos, p))
        for short, hits in index.contractions.items():
            hits.sort(key=lambda h: -h[1])
            if len(hits) == 1 and short not in index.expansions:  # an ambiguous contraction composes nothing
                index.expansions[short] = {fold(index.names[hits[0][0]])}
        return index

    def positions(self, name: str) -> list[int]:
        """Positions of the stored names equal to ``name`` (folded)."""
        return list(self.by_fold.get(fold(name), []))

    def positions_of_id(self, instance_id: str) -> list[int]:
        """Positions of the instance ``instance_id``."""
        return [self.by_id[instance_id]] if instance_id in self.by_id else []

    def _exact_or_one_edit(self, word: str) -> list[tuple[int, bool]]:
        """Positions of names equal to ``word`` (folded; True) or, when none, one substituted or inserted
        character from it (False; never a deleted one: the user's characters are evidence — 风心脏病 is not
        心脏病)."""
        exact = self.by_fold.get(word)
        if exact:
            return [(p, True) for p in exact]
        if self.ngrams is None:
            return []
        return [(p, False) for p, _ in self.ngrams.one_edit(word) if len(self.ngrams.folded[p]) >= len(word)]

    @staticmethod
    def _rewrites(word: str, table: dict[str, set[str]], shortest: int) -> list[tuple[str, str]]:
        """``(rewritten word, replaced part)`` for every part of ``word`` (``shortest`` characters or more, not
        the whole word) found in ``table``, longest parts first, at most :data:`_MAX_REWRITES`."""
        out: list[tuple[str, str]] = []
        for size in range(len(word) - 1, shortest - 1, -1):
            for i in range(len(word) - size + 1):
                part = word[i:i + size]
                for replacement in sorted(table.get(part, ())):
                    out.append((word[:i] + _seam(replacement, word[i + size:]), part))
                    if len(out) >= _MAX_REWRITES:
                        return out
        return out

    def lookup(self, keyword: str, limit: int = 10) -> list[OtherName]:
        """Stored names ``keyword`` may stand for (see the module docstring)."""
        word = fold(keyword)
        if len(word) < 2:
            return []
        own = set(self.by_fold.get(word, []))
        best: dict[int, OtherName] = {}

        def add(pos: int, match_type: OtherNameType, sim: float, via: str = "") -> None:
            if pos not in own and (pos not in best or sim > best[pos].similarity):
                best[pos] = OtherName(pos, match_type, round(sim, 4), via)

        hits = self.contractions.get(word, [])
        for pos, p in hits:
            add(pos, "abbreviation", 0.6 + 0.35 * p / hits[0][1], word)
        for rewritten, part in self._rewrites(word, self.expansions, _MIN_PART):
            for pos, equal in self._exact_or_one_edit(rewritten):
                add(pos, "abbreviation", 0.9 if equal else 0.8, part)
        for rewritten, part in self._rewrites(word, self.substitutions, 1):
            for pos, equal in self._exact_or_one_edit(rewritten):
                add(pos, "segments", 0.85 if equal else 0.75, part)
        if self.segments is not None:
            for pos, score in self.segments.match(word, limit):
                add(pos, "segments", 0.9 * score)
        if self.ngrams is not None:
            for pos, distance in self.ngrams.one_edit(word, limit, substitution_only=True):
                if distance == 1:
                    add(pos, "ngram", 1 - 1 / max(len(word), len(self.names[pos])))
        out = sorted(best.values(), key=lambda o: (-o.similarity, len(self.names[o.position]), o.position))
        return out[:limit]


#: (network, version) -> {object type id: its index}: every type of a network kept (a network of 1,200 types must
#: not evict its own indexes), at most :data:`_NETWORKS` networks. A version is the uuid of one load, so two store
#: objects on the same database (a server's routes and its agent) share one index, and no two loads ever do.
_indexes: dict[tuple[str, str], dict[str, OtherNameIndex | None]] = {}
_names_by_type: dict[tuple[str, str], dict[str, list[tuple[str, str]]]] = {}
_NETWORKS = 8
_lock = threading.Lock()


def _type_names(store: ContextStore, kn_id: str, key: tuple[str, str]) -> dict[str, list[tuple[str, str]]]:
    """``{object type id: [(instance id, name)]}`` of the network, grouped once per version."""
    with _lock:
        grouped = _names_by_type.get(key)
    if grouped is None:
        grouped = {}
        for type_id, iid, name in store.instance_names(kn_id):
            if name:
                grouped.setdefault(type_id, []).append((iid, str(name)))
        with _lock:
            if len(_names_by_type) >= _NETWORKS:
                _names_by_type.clear()
            _names_by_type[key] = grouped
    return grouped


def other_name_index(store: ContextStore, kn_id: str, ot: ObjectType, field_name: str,
                     alias_field: str | None, alias_values: Callable[[object], list[str]]) -> OtherNameIndex | None:
    """The index of ``ot``'s names in ``field_name`` (built once per network version and type; None when
    ``field_name`` is not the type's display key). ``alias_field``: its other-names property (None: no recorded
    pairs); ``alias_values``: the function reading that property's value into a list of names."""
    key = (kn_id, store.network_version(kn_id))
    with _lock:
        types = _indexes.get(key)
        if types is not None and ot.id in types:
            return types[ot.id]
    index: OtherNameIndex | None = None
    if field_name == ot.display_key:
        instances = _type_names(store, kn_id, key).get(ot.id, [])
        recorded: list[tuple[str, str]] = []
        if alias_field is not None:
            for hit in store.query_instances(kn_id, ot.id, None, 10**7, sort_by_score=False):
                name = hit.properties.get(field_name)
                if name:
                    recorded += [(str(name), a) for a in alias_values(hit.properties.get(alias_field))]
        index = OtherNameIndex.build(instances, recorded)
    with _lock:
        if key not in _indexes and len(_indexes) >= _NETWORKS:
            _indexes.clear()
        _indexes.setdefault(key, {})[ot.id] = index
    return index

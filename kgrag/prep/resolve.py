"""Resolve a question's topic and answer references (an IRI, an id, a name) to rows of the CSR graph.

    resolution = EntityResolver(graph).resolve_all(questions)   # rows per question, counts per reason

Order: the node's key (its IRI, or a TSV node's text), its local id (``m.0abc``, ``e.…``; a Freebase IRI's last
segment), its exact name, its normalised name (:func:`normalise`: case, accents, punctuation).
A name several nodes share resolves to the one with the most edges (counted as ``ambiguous name``). What does not
resolve is counted per reason; the question keeps what did (a question with no topic left is counted, not dropped).
The built-in datasets resolve by key only, as before (``by_key_only``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from kgrag.data.records import KGQuestion
from kgrag.graph.csr import CSRGraph
from kgrag.text import name_key

__all__ = ["EntityResolver", "Resolution"]

#: a name as looked up by its normalised form: case, accents and punctuation folded (``"Hitchhiker's  Guide!"`` →
#: ``"hitchhiker s guide"``; :func:`kgrag.text.name_key`)
normalise = name_key


_IRI_LIKE = re.compile(r"^(?:[a-z][a-z0-9+.-]*:|_:)", re.IGNORECASE)


@dataclass
class Resolution:
    topics: list[list[int]]
    answers: list[list[int]]
    no_topic: int = 0
    unresolved_answers: int = 0
    resolved_by: dict[str, int] = field(default_factory=dict)
    unresolved_by: dict[str, int] = field(default_factory=dict)


class EntityResolver:
    """Look-ups over one graph's keys, ids and names (see the module docstring)."""

    def __init__(self, graph: CSRGraph) -> None:
        self.graph = graph
        self.key_index = graph.key_index
        self.id_index = graph.id_index
        self._names: dict[str, int] | None = None
        self._normal: dict[str, int] | None = None
        self._wanted: set[str] | None = None  # the names resolve_all will look up (None: any name)

    @cached_property
    def _by_degree(self) -> list[int]:
        """Rows, most edges first (on a shared name the first holder wins); sorted once per resolver."""
        return np.argsort(-self.graph.degree, kind="stable").tolist()

    def _build_names(self) -> None:
        """name -> row for the names being looked up (all names when none were announced), one pass."""
        exact: dict[str, int] = {}
        self.ambiguous: set[str] = set()
        names, wanted = self.graph.entity_names, self._wanted
        for row in self._by_degree:
            name = names[row]
            if not name or (wanted is not None and name not in wanted):
                continue
            if name in exact:
                self.ambiguous.add(name)
            else:
                exact[name] = row
        self._names = exact

    def _build_normal(self) -> None:
        """normalised name -> row over every name: built only when an exact look-up fails."""
        normal: dict[str, int] = {}
        names = self.graph.entity_names
        for row in self._by_degree:
            name = names[row]
            if name:
                normal.setdefault(normalise(name), row)
        self._normal = normal

    def resolve(self, ref: str, ref_id: str | None = None) -> tuple[int | None, str]:
        """(row, how it resolved) or (None, why not)."""
        for candidate in filter(None, (ref_id, ref)):
            row = self.key_index.get(candidate)
            if row is not None:
                return row, "key"
            local = re.split(r"[/#]", candidate)[-1] if _IRI_LIKE.match(candidate) else candidate
            row = self.id_index.get(local)
            if row is not None:
                return row, "id"
        if not ref:
            return None, "unknown IRI or id"
        if self._names is None:
            self._build_names()
        assert self._names is not None
        row = self._names.get(ref)
        if row is not None:
            return row, "ambiguous name" if ref in self.ambiguous else "exact name"
        if self._normal is None:
            self._build_normal()
        assert self._normal is not None
        row = self._normal.get(normalise(ref))
        if row is not None:
            return row, "normalised name"
        return None, "unknown IRI or id" if _IRI_LIKE.match(ref) and " " not in ref else "unknown name"

    def _refs(self, ids: Sequence[str], names: Sequence[str]) -> list[tuple[str, str | None]]:
        if ids and len(ids) == len(names):
            return list(zip(names, ids, strict=True))
        return [("", i) for i in ids] + [(n, None) for n in names]

    def resolve_all(self, questions: list[KGQuestion], by_key_only: bool = False) -> Resolution:
        """Rows per question (``topic_ids``/``answer_ids`` set to the resolved keys)."""
        out = Resolution(topics=[], answers=[])
        resolved: Counter[str] = Counter()
        unresolved: Counter[str] = Counter()
        keys = self.graph.entity_keys
        # index only the names questions use (a large graph's names stay bytes); more names later: index again
        wanted = {n for q in questions for n in (*q.topic_names, *q.answer_names) if n}
        if self._names is None or (self._wanted is not None and not wanted <= self._wanted):
            self._names = None
            self._wanted = wanted | (self._wanted or set())
        for q in questions:
            rows_per_side = []
            for side, ids, names in (("topic", q.topic_ids, q.topic_names), ("answer", q.answer_ids,
                                                                             q.answer_names)):
                if by_key_only:
                    refs = list(ids or names)
                    rows = [self.key_index[k] for k in refs if k in self.key_index]
                    if side == "answer":
                        out.unresolved_answers += len(refs) - len(rows)
                    rows_per_side.append(rows)
                    continue
                rows = []
                aligned = bool(ids) and len(ids) == len(names)
                for name, ref_id in self._refs(ids, names):
                    row, how = self.resolve(name, ref_id)
                    if row is None and not name and not aligned and names:
                        continue  # an id beside the names (WebQSP's entity answers): its name is tried too
                    if row is None:
                        unresolved[f"{side}: {how}"] += 1
                        out.unresolved_answers += side == "answer"
                    else:
                        resolved[f"{side}: {how}"] += 1
                        rows.append(row)
                rows_per_side.append(list(dict.fromkeys(rows)))
            topics, answers = rows_per_side
            q.topic_ids = [keys[r] for r in topics]
            q.answer_ids = [keys[r] for r in answers]
            out.no_topic += not topics
            out.topics.append(topics)
            out.answers.append(answers)
        out.resolved_by, out.unresolved_by = dict(resolved), dict(unresolved)
        return out

"""Relation-name utilities of the KG tools: normalisation, filters, CVT flatten naming."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from kgrag.data.download import MEANINGLESS_RELATIONS_DEFAULT
from kgrag.data.freebase import FREEBASE_NS, read_meaningless_relations
from kgrag.graph.iri import NAME_PREDICATE, VALUE_PREDICATE

#: predicates that label or value a node rather than link two nodes: never offered as a path
LABEL_PREDICATES = (NAME_PREDICATE, VALUE_PREDICATE)


def normalize_relation(relation: str, base: str = FREEBASE_NS) -> str:
    """Dotted relation id: strips whitespace, the namespace IRI (or ``ns:``) and turns ``/`` into ``.``."""
    cleaned = relation.strip()
    for prefix in (base, FREEBASE_NS, "ns:"):
        if cleaned.startswith(prefix):
            cleaned = cleaned[len(prefix):]
            break
    return cleaned.replace("/", ".")


def common_prefix(rel1: str, rel2: str) -> str:
    """The dotted segments two relations share at their start (``people.a.b``, ``people.c`` → ``people``)."""
    shared: list[str] = []
    for a, b in zip(rel1.split("."), rel2.split("."), strict=False):
        if a != b:
            break
        shared.append(a)
    return ".".join(shared)


def flatten_relation(rel1: str, rel2: str) -> str:
    """Name of the two-hop path ``rel1`` then ``rel2``: the common prefix is removed from ``rel1`` and the two
    are joined (``people.person.spouse_s`` + ``people.marriage.spouse`` → ``person.spouse_s.people.marriage.spouse``)."""
    prefix = common_prefix(rel1, rel2)
    head = rel1[len(prefix):].lstrip(".") if prefix else rel1
    return f"{head}.{rel2}" if head else rel2


@dataclass(frozen=True)
class RelationFilters:
    """The CWQ whitelist (with fallback) and the meaningless-relation patterns."""

    whitelist: frozenset[str] = frozenset()
    meaningless: tuple[str, ...] = MEANINGLESS_RELATIONS_DEFAULT

    @classmethod
    def from_data_dir(cls, data_dir: Path) -> RelationFilters:
        """Read ``freebase/filtered_cwq_white_list.json`` and ``meaningless_relations.txt`` when present."""
        whitelist_path = data_dir / "freebase" / "filtered_cwq_white_list.json"
        meaningless_path = data_dir / "freebase" / "meaningless_relations.txt"
        whitelist: frozenset[str] = frozenset()
        if whitelist_path.is_file():
            uris = json.loads(whitelist_path.read_text(encoding="utf-8"))
            whitelist = frozenset(normalize_relation(u) for u in uris)
        meaningless = (
            tuple(read_meaningless_relations(meaningless_path)) if meaningless_path.is_file()
            else MEANINGLESS_RELATIONS_DEFAULT
        )
        return cls(whitelist=whitelist, meaningless=meaningless)

    def apply_whitelist(self, relations: Sequence[str]) -> list[str]:
        """Keep whitelisted relations; when that would leave nothing, keep the input (spec §2.3.4)."""
        if not self.whitelist:
            return list(relations)
        kept = [r for r in relations if r in self.whitelist]
        return kept or list(relations)

    @cached_property
    def _exact(self) -> frozenset[str]:
        return frozenset(self.meaningless) | frozenset(LABEL_PREDICATES)

    @cached_property
    def _prefixes(self) -> tuple[str, ...]:
        return tuple(p + "." for p in self.meaningless)

    def is_meaningless(self, relation: str) -> bool:
        """A label predicate, or a meaningless pattern matched exactly or as ``pattern + '.'`` prefix."""
        return relation in self._exact or relation.startswith(self._prefixes)

    def drop_meaningless(self, relations: Iterable[str]) -> list[str]:
        return [r for r in relations if not self.is_meaningless(r)]

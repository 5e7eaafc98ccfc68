"""Typed records shared by every dataset reader.

A dataset reader returns plain records; the graph layer (``kgrag.graph``) turns a :class:`KGDataset` into RDF
and a CSR graph. Entity *keys* are the dataset's own identifiers: the name string for MetaQA (as MetaQA does),
a Freebase MID (``m.…``) for Freebase-shaped data, ``<Type>:<name>`` for the medical graph.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Triple:
    """One edge ``head --relation--> tail`` between two entity keys."""

    head: str
    relation: str
    tail: str


@dataclass(frozen=True, slots=True)
class LineIssue:
    """A malformed input line: counted and reported, never silently dropped."""

    path: str
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.reason}"


@dataclass(slots=True)
class ReadResult(Generic[T]):
    """Records read from one or more files plus the lines that could not be read."""

    records: list[T]
    issues: list[LineIssue] = field(default_factory=list)


@dataclass(slots=True)
class KGQuestion:
    """A question over a triple graph, with its topic entities and gold answers.

    ``topic_names``/``answer_names`` are what the file says; ``topic_ids``/``answer_ids`` are entity keys
    (filled by the reader when the file has them, else resolved by the data-prep flow).
    """

    qid: str
    text: str
    topic_names: list[str]
    answer_names: list[str]
    dataset: str
    split: str
    hop: int | None = None
    qtype: str | None = None
    topic_ids: list[str] = field(default_factory=list)
    answer_ids: list[str] = field(default_factory=list)


@dataclass(slots=True)
class KGDataset:
    """A triple graph: edges between entity keys, display names, typed literal values.

    ``names`` maps an entity key to its display name; keys without a name are unnamed nodes (e.g. Freebase CVTs).
    ``literal_types`` maps an entity key whose name is a value (a year, a rating) to an XSD datatype local name
    (``gYear``, ``decimal``, ``integer``); the RDF export adds that value as a typed literal.
    ``iri_base`` is the namespace its entities and relations live in (see ``kgrag.graph.iri``);
    ``id_style`` says how an entity key becomes the IRI's local id: ``"key"`` (the key already is an id, such as a
    Freebase MID ``m.0abc``) or ``"slug"`` (a stable, URL-safe id derived from the key); ``name_lang`` is the
    language tag of the name literals.
    """

    name: str
    triples: list[Triple]
    names: dict[str, str]
    iri_base: str
    id_style: str = "key"
    name_lang: str = "en"
    literal_types: dict[str, str] = field(default_factory=dict)
    issues: list[LineIssue] = field(default_factory=list)

    @property
    def relations(self) -> list[str]:
        return sorted({t.relation for t in self.triples})

"""Knowledge-network ontology and instance records (pydantic), shared by the store and kn_search.

A knowledge network (``kn_id``) has object types (with data properties whose ``condition_operations`` say how
they can be searched), relation types between object types, action types, and instances of object types linked
by relation types. Declared in YAML/JSON (see ``kgrag/network/loaders``) and stored by ``kgrag.network.store``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

#: condition operations a data property may declare (spec kn-search.md §3.3.1 uses knn / match / equal)
ConditionOperation = Literal[
    "==", "!=", "in", "contain", "like", "prefix", "regex", "exist", "range", ">", ">=", "<", "<=", "match", "knn",
    "equal",
]
#: property types treated as text (searchable by knn / match / equal when declared)
TEXT_TYPES = frozenset({"text", "string", "varchar", "char", "keyword"})


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class DataProperty(_Model):
    name: str
    display_name: str = ""
    type: str = "string"  # text | string | varchar | char | integer | float | date | boolean | …
    comment: str = ""
    condition_operations: list[str] = Field(default_factory=list)


class LogicProperty(_Model):
    name: str
    display_name: str = ""
    type: str = "metric"
    comment: str = ""


class ObjectType(_Model):
    id: str
    name: str
    comment: str = ""
    tags: list[str] = Field(default_factory=list)
    data_source: dict[str, Any] = Field(default_factory=dict)
    data_properties: list[DataProperty] = Field(default_factory=list)
    logic_properties: list[LogicProperty] = Field(default_factory=list)
    primary_keys: list[str] = Field(default_factory=list)
    display_key: str = "name"  # the property holding an instance's name


class RelationType(_Model):
    id: str
    name: str
    comment: str = ""
    source_object_type_id: str
    target_object_type_id: str
    #: how instances link: explicit link rows ("links") or source property == target property ("property")
    mapping: dict[str, Any] = Field(default_factory=lambda: {"kind": "links"})


class ActionType(_Model):
    id: str
    name: str
    object_type_id: str = ""
    comment: str = ""
    tags: list[str] = Field(default_factory=list)


class TextConfig(_Model):
    """Which instance texts become retrievable text chunks and entity descriptions (query modes).

    ``sections``: object type id -> its long-text properties, in reading order; each value is split into
    chunks of at most ``chunk_tokens`` tokens (sentence-aligned, ``overlap_tokens`` carried over) whose
    ``source_ids`` name the instance. ``descriptions``: object type id -> the property that describes an
    instance (its first ``description_tokens`` tokens); types not named get a description generated from
    their links.
    """

    sections: dict[str, list[str]] = Field(default_factory=dict)
    descriptions: dict[str, str] = Field(default_factory=dict)
    chunk_tokens: int = Field(default=512, ge=32, le=8192)
    overlap_tokens: int = Field(default=64, ge=0, le=1024)
    description_tokens: int = Field(default=120, ge=8, le=2048)


class KnowledgeNetwork(_Model):
    kn_id: str
    name: str
    comment: str = ""
    object_types: list[ObjectType] = Field(default_factory=list)
    relation_types: list[RelationType] = Field(default_factory=list)
    action_types: list[ActionType] = Field(default_factory=list)
    #: text chunks and descriptions for the query modes; None = no chunks (entities still get descriptions)
    text: TextConfig | None = None


def fields_with(network: KnowledgeNetwork, operation: str) -> dict[str, list[str]]:
    """``{object type id: names of its data properties whose condition operations include operation}``."""
    return {
        ot.id: [p.name for p in ot.data_properties if operation in p.condition_operations]
        for ot in network.object_types
    }


class Instance(_Model):
    """One instance of an object type: ``id`` is its unique identity, ``properties`` its typed values."""

    object_type_id: str
    id: str
    properties: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Link:
    """One link of a relation type, ``source_id -> target_id``: a slotted value (64 bytes, where a pydantic model
    takes ~490: a million-row network holds millions of them while it loads)."""

    relation_type_id: str
    source_id: str
    target_id: str

    def __post_init__(self) -> None:
        if type(self.relation_type_id) is not str or type(self.source_id) is not str \
                or type(self.target_id) is not str:
            raise ValueError(f"a link's relation type and ids are strings: {self.relation_type_id!r}, "
                             f"{self.source_id!r} -> {self.target_id!r}")


class InstanceHit(_Model):
    """A query result: the instance plus ``score`` when a scored operation (knn/match) produced it."""

    object_type_id: str
    id: str
    properties: dict[str, Any]
    score: float | None = None


@dataclass
class PathHit:
    """One relation-path result: ``source --relation_type_id--> target`` (in the relation's own direction)."""

    source: InstanceHit
    relation_type_id: str
    target: InstanceHit


class Condition(_Model):
    """The condition language (the "Ontology Query" role): a leaf ``field op value`` or ``and``/``or`` nesting.

    ``knn`` takes ``limit`` (neighbours per field); ``range`` takes ``value=[low, high]``; ``exist`` no value;
    ``field="*"`` with ``match``/``knn`` means every searchable field (type search).
    """

    operation: Literal["and", "or", "==", "!=", "in", "contain", "like", "prefix", "regex", "exist", "range",
                       ">", ">=", "<", "<=", "match", "knn"]
    field: str | None = None
    value: Any = None
    sub_conditions: list[Condition] = Field(default_factory=list)
    limit: int | None = Field(default=None, ge=1)

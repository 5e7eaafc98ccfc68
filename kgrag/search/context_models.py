"""Contextual recall models (spec contextual-recall.md, the specification of recalling how a question's words
are stored, §3.2 stage outputs and §4 ``contextual_knowledge``).

Stage 1 (keyword extraction) produces :class:`Extraction`; stages 3–6 produce :class:`KeywordMapping`,
:class:`AttributeFormat`, :class:`RelationPattern` and :class:`PrimaryFields`; stage 7 assembles them into
:class:`ContextualKnowledge`, the ``contextual_knowledge`` field of a kn_search response when the request asks for
it (``include_context``; always on ``POST /api/agent-retrieval/in/v1/kn/context_search``).
Field names and value vocabularies are the spec's.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "AttributeCondition",
    "AttributeConditionIn",
    "AttributeFormat",
    "ContextConfig",
    "ContextualKnowledge",
    "EntityKeyword",
    "Extraction",
    "KeywordMapping",
    "PrimaryFields",
    "RelationPattern",
    "RelationWord",
    "StorageForm",
]

Comparator = Literal["==", "!=", ">", ">=", "<", "<=", "range"]
#: how a storage form relates to the keyword: the name itself, a name containing it, a variant of it, or the name
#: of an instance that records the keyword as one of its other names (``aliases``; 脑溢血 -> 脑出血)
MatchType = Literal["exact", "alias", "standard_name", "abbreviation", "segments", "ngram", "contains", "fuzzy"]
StorageFormat = Literal["number", "string", "date", "range_string", "boolean", "unknown"]
ValuePattern = Literal["integer", "float", "string_with_unit", "range", "date", "string", "boolean", "unknown"]
Cardinality = Literal["one_to_one", "one_to_many", "many_to_one", "many_to_many"]


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


# -- stage 1 ---------------------------------------------------------------------------------------------------


class EntityKeyword(_Out):
    text: str
    type: Literal["entity"] = "entity"
    confidence: float
    #: True when the text is, verbatim, the name of an instance of the network (dictionary hit)
    in_dictionary: bool = False


class AttributeCondition(_Out):
    """An attribute-value condition: ``年龄大于30岁`` -> attribute 年龄 (mapped to ``age``), ``>``, 30, 岁."""

    text: str
    attribute: str | None = None  # the words naming the attribute in the question (年龄), when present
    operation: Comparator = "=="
    value: Any = None  # a number, a string, or [low, high] for a range
    unit: str | None = None
    confidence: float = 0.8


class RelationWord(_Out):
    text: str
    type: Literal["relation"] = "relation"
    confidence: float
    relation_type_ids: list[str] = Field(default_factory=list)  # relation types the word names


class Extraction(_Out):
    entities: list[EntityKeyword] = Field(default_factory=list)
    attribute_values: list[AttributeCondition] = Field(default_factory=list)
    relation_words: list[RelationWord] = Field(default_factory=list)
    source: Literal["rules", "llm"] = "rules"


# -- stages 3-6 (spec §4.2) ------------------------------------------------------------------------------------


class StorageForm(_Out):
    form: str
    match_type: MatchType
    sample_instance_id: str
    sample_instance_name: str
    #: how close ``form`` is to the keyword (1 for exact); for ``alias`` how close the recorded alias is; for a
    #: ``fuzzy`` knn neighbour the larger of the character similarity and the embedding cosine; for the other-name
    #: types (``standard_name``, ``abbreviation``, ``segments``, ``ngram``: :mod:`kgrag.search.other_names`) the
    #: strategy's score
    similarity: float = 1.0


class KeywordMapping(_Out):
    keyword: str
    object_type_id: str | None = None  # None: the keyword maps nowhere (confidence 0)
    primary_field: str | None = None
    match_fields: list[str] = Field(default_factory=list)
    storage_forms: list[StorageForm] = Field(default_factory=list)
    match_confidence: float = 0.0


class AttributeFormat(_Out):
    object_type_id: str
    attribute: str
    storage_format: StorageFormat
    value_samples: list[Any] = Field(default_factory=list)
    value_pattern: ValuePattern
    query_operation: Comparator
    has_unit: bool = False
    is_range: bool = False
    unit: str | None = None
    #: the user's value rewritten the way the data stores it (30岁 -> 30; 男性 -> male), when it can be
    query_value: Any = None
    source_text: str = ""


class RelationPattern(_Out):
    relation_type_id: str
    source_object_type_id: str
    target_object_type_id: str
    source_field: str
    target_field: str
    typical_source_values: list[Any] = Field(default_factory=list)
    typical_target_values: list[Any] = Field(default_factory=list)
    relation_pattern: Cardinality
    link_count: int = 0


class PrimaryFields(_Out):
    object_type_id: str
    primary_name_field: str
    primary_id_field: str
    field_samples: dict[str, list[Any]] = Field(default_factory=dict)


class ContextualKnowledge(_Out):
    keyword_mappings: list[KeywordMapping] = Field(default_factory=list)
    attribute_formats: list[AttributeFormat] = Field(default_factory=list)
    relation_patterns: list[RelationPattern] = Field(default_factory=list)
    object_type_primary_fields: list[PrimaryFields] = Field(default_factory=list)
    extraction: Extraction | None = None
    #: §7.2.3: what failed, when a part could not be recalled (the rest is still returned)
    errors: list[str] = Field(default_factory=list)


# -- request / response -----------------------------------------------------------------------------------------


class AttributeConditionIn(BaseModel):
    """A condition the caller already knows (request ``attribute_conditions``): validated against the network —
    an unknown object type or attribute, or an unsupported operation, is a 400 naming it."""

    model_config = ConfigDict(extra="forbid")

    attribute: str = Field(min_length=1)
    operation: Comparator = "=="
    value: Any = None
    object_type_id: str | None = None
    unit: str | None = None


class ContextConfig(BaseModel):
    """Per-strategy limits (spec §5, §6.1: 3-5 examples per strategy, strict limits)."""

    model_config = ConfigDict(extra="ignore")

    forms_per_strategy: int = Field(default=5, ge=1, le=20)
    skip_when_exact: bool = True  # §6.1.4: an exact hit skips contains/fuzzy for that keyword and type
    max_keywords: int = Field(default=8, ge=1, le=32)
    max_types_per_keyword: int = Field(default=3, ge=1, le=10)
    attribute_samples: int = Field(default=8, ge=1, le=50)
    relation_samples: int = Field(default=3, ge=1, le=10)
    max_relations: int = Field(default=5, ge=0, le=20)
    primary_field_samples: int = Field(default=3, ge=1, le=10)
    min_fuzzy_similarity: float = Field(default=0.4, ge=0.0, le=1.0)
    #: a knn neighbour at least this close (cosine) is a fuzzy form whatever its character similarity
    min_knn_cosine: float = Field(default=0.75, ge=0.0, le=1.0)
    #: other names the data does not record (contractions, segments, one edit; with an LLM the standard-name
    #: rewrite): :mod:`kgrag.search.other_names`
    other_names: bool = True

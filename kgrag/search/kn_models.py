"""kn_search request / response models and the retrieval-config merge (spec kn-search.md, the kn_search API
specification of concept and instance recall, §2.2–§2.5).

Two families of config models:

* ``*In`` models are what a request may carry: every field optional (``None`` = absent), unknown keys
  ignored, no range checks (an out-of-range number simply does not override the default);
* the resolved models (:class:`ConceptRetrievalConfig`, :class:`SemanticInstanceRetrievalConfig`,
  :class:`PropertyFilterConfig`, :class:`RetrievalConfig`) carry the defaults.

:func:`merge_retrieval_config` (the spec's MergeRetrievalConfig) fills the resolved config from a request's:
a number overrides its default only when it is ``> 0``; a boolean overrides whenever present (``false``
included); ``null`` counts as absent.

Defaults the spec states: ``coarse_object_limit=2000``, ``coarse_relation_limit=300``,
``coarse_min_relation_count=5000``, ``initial_candidate_count=50``, ``per_type_instance_limit=5``,
``max_semantic_sub_conditions=10``, ``min_direct_relevance=0.3``, ``enable_global_final_score_ratio_filter=true``,
``global_final_score_ratio=0.25``, ``exact_name_match_score=0.85``, ``max_properties_per_instance=20``,
``max_property_value_length=500``, ``enable_property_filter=true``, ``only_schema=false``,
``enable_rerank=true``. The others follow the reference implementation's published defaults (Go
``KnSearchConceptRetrievalConfig`` / ``KnSearchSemanticInstanceRetrievalConfig`` struct tags): ``top_k=10``,
``skip_llm=true``, ``return_union=false``, ``include_sample_data=false``, ``schema_brief=false``,
``enable_coarse_recall=true``, ``enable_property_brief=true``, ``per_object_property_top_k=8``,
``global_property_top_k=30``, ``semantic_field_keep_ratio=0.2``, ``semantic_field_keep_min=5``,
``semantic_field_keep_max=15``, ``semantic_field_rerank_batch_size=128``. ``skip_llm``, ``return_union`` and
the ``semantic_field_*`` knobs are accepted and merged but not used (spec §5: no LLM filter, no multi-turn
union; §3.3 names no field-selection step).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from kgrag.search.context_models import AttributeConditionIn, ContextConfig, ContextualKnowledge

__all__ = [
    "ConceptRetrievalConfig",
    "ConceptRetrievalConfigIn",
    "KnSearchActionType",
    "KnSearchDataProperty",
    "KnSearchLogicProperty",
    "KnSearchNode",
    "KnSearchObjectType",
    "KnSearchRelationType",
    "KnSearchRequest",
    "KnSearchResponse",
    "PropertyFilterConfig",
    "PropertyFilterConfigIn",
    "RetrievalConfig",
    "RetrievalConfigIn",
    "SemanticInstanceRetrievalConfig",
    "SemanticInstanceRetrievalConfigIn",
    "merge_retrieval_config",
]

MSG_NO_CONCEPTS = "未召回到相关概念，无法进行实例检索"
MSG_NO_INSTANCES = "未检索到符合条件的实例数据"
MSG_INSTANCE_FAILED = "语义实例召回失败，仅返回概念召回结果："
#: a network whose deferred vectors are being made (``kgrag kn load --defer-vectors``): its knn was not used
MSG_VECTORS_PENDING = "该网络的向量仍在生成（{done}/{total} 个实例），本次实例召回未使用向量（knn）检索，仅用全文与条件"


# -- resolved config (defaults) ------------------------------------------------------------------------


class _Resolved(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ConceptRetrievalConfig(_Resolved):
    top_k: int = 10
    skip_llm: bool = True  # reserved: no LLM relation filter in this implementation
    return_union: bool = False  # reserved: no multi-turn union
    include_sample_data: bool = False
    schema_brief: bool = False
    enable_coarse_recall: bool = True
    coarse_object_limit: int = 2000
    coarse_relation_limit: int = 300
    coarse_min_relation_count: int = 5000
    enable_property_brief: bool = True
    per_object_property_top_k: int = 8
    global_property_top_k: int = 30


class SemanticInstanceRetrievalConfig(_Resolved):
    initial_candidate_count: int = 50
    per_type_instance_limit: int = 5
    max_semantic_sub_conditions: int = 10
    semantic_field_keep_ratio: float = 0.2  # reserved
    semantic_field_keep_min: int = 5  # reserved
    semantic_field_keep_max: int = 15  # reserved
    semantic_field_rerank_batch_size: int = 128  # reserved
    min_direct_relevance: float = 0.3
    enable_global_final_score_ratio_filter: bool = True
    global_final_score_ratio: float = 0.25
    exact_name_match_score: float = 0.85


class PropertyFilterConfig(_Resolved):
    max_properties_per_instance: int = 20
    max_property_value_length: int = 500
    enable_property_filter: bool = True


class RetrievalConfig(_Resolved):
    concept_retrieval: ConceptRetrievalConfig = Field(default_factory=ConceptRetrievalConfig)
    semantic_instance_retrieval: SemanticInstanceRetrievalConfig = Field(
        default_factory=SemanticInstanceRetrievalConfig
    )
    property_filter: PropertyFilterConfig = Field(default_factory=PropertyFilterConfig)


# -- request-side (partial) config ---------------------------------------------------------------------


class _Partial(BaseModel):
    model_config = ConfigDict(extra="ignore")

    @model_validator(mode="before")
    @classmethod
    def _no_bool_numbers(cls, data: Any) -> Any:
        """Reject ``true``/``false`` for a numeric field (pydantic would read them as 1/0)."""
        if isinstance(data, dict):
            for name, value in data.items():
                field = cls.model_fields.get(name)
                if field is not None and isinstance(value, bool) and field.annotation != (bool | None):
                    raise ValueError(f"{name} must be a number, not a boolean")
        return data


class ConceptRetrievalConfigIn(_Partial):
    top_k: int | None = None
    skip_llm: bool | None = None
    return_union: bool | None = None
    include_sample_data: bool | None = None
    schema_brief: bool | None = None
    enable_coarse_recall: bool | None = None
    coarse_object_limit: int | None = None
    coarse_relation_limit: int | None = None
    coarse_min_relation_count: int | None = None
    enable_property_brief: bool | None = None
    per_object_property_top_k: int | None = None
    global_property_top_k: int | None = None


class SemanticInstanceRetrievalConfigIn(_Partial):
    initial_candidate_count: int | None = None
    per_type_instance_limit: int | None = None
    max_semantic_sub_conditions: int | None = None
    semantic_field_keep_ratio: float | None = None
    semantic_field_keep_min: int | None = None
    semantic_field_keep_max: int | None = None
    semantic_field_rerank_batch_size: int | None = None
    min_direct_relevance: float | None = None
    enable_global_final_score_ratio_filter: bool | None = None
    global_final_score_ratio: float | None = None
    exact_name_match_score: float | None = None


class PropertyFilterConfigIn(_Partial):
    max_properties_per_instance: int | None = None
    max_property_value_length: int | None = None
    enable_property_filter: bool | None = None


class RetrievalConfigIn(_Partial):
    concept_retrieval: ConceptRetrievalConfigIn | None = None
    semantic_instance_retrieval: SemanticInstanceRetrievalConfigIn | None = None
    property_filter: PropertyFilterConfigIn | None = None


def _merge_section(default: _Resolved, partial: _Partial | None) -> Any:
    if partial is None:
        return default.model_copy()
    updates: dict[str, Any] = {}
    for name, field in type(default).model_fields.items():
        value = getattr(partial, name, None)
        if value is None:
            continue
        if field.annotation is bool:
            updates[name] = bool(value)
        elif isinstance(value, bool):  # a boolean where a number belongs: ignored
            continue
        elif value > 0:  # numbers override only when positive (spec MergeRetrievalConfig)
            updates[name] = type(getattr(default, name))(value)
    return default.model_copy(update=updates)


def merge_retrieval_config(partial: RetrievalConfigIn | None, base: RetrievalConfig | None = None) -> RetrievalConfig:
    """The effective config: ``base`` (the defaults unless given) overridden field by field by ``partial``."""
    base = base if base is not None else RetrievalConfig()
    if partial is None:
        return base.model_copy(deep=True)
    return RetrievalConfig(
        concept_retrieval=_merge_section(base.concept_retrieval, partial.concept_retrieval),
        semantic_instance_retrieval=_merge_section(
            base.semantic_instance_retrieval, partial.semantic_instance_retrieval
        ),
        property_filter=_merge_section(base.property_filter, partial.property_filter),
    )


# -- request ---------------------------------------------------------------------------------------------


class KnSearchRequest(BaseModel):
    """Body of ``POST /api/agent-retrieval/in/v1/kn/kn_search``."""

    model_config = ConfigDict(extra="ignore")

    query: str = Field(min_length=1, description="用户查询或关键词，多个关键词可用空格分隔")
    kn_id: str = Field(min_length=1, description="知识网络 ID")
    session_id: str | None = Field(default=None, description="会话 ID，仅透传")
    additional_context: str | None = Field(default=None, description="额外上下文，当前未使用")
    retrieval_config: RetrievalConfigIn | None = None
    only_schema: bool = False
    enable_rerank: bool = True
    include_context: bool = Field(default=False, description="附加细粒度上下文召回 contextual_knowledge（默认关闭）")
    context_config: ContextConfig | None = None
    attribute_conditions: list[AttributeConditionIn] | None = Field(
        default=None, description="调用方已知的属性条件 {object_type_id?, attribute, operation, value}，按网络校验")

    @field_validator("query", "kn_id")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value


# -- response --------------------------------------------------------------------------------------------


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class KnSearchDataProperty(_Out):
    name: str
    display_name: str | None = None
    comment: str | None = None
    type: str | None = None  # full mode only
    condition_operations: list[str] | None = None  # full mode only


class KnSearchLogicProperty(_Out):
    name: str
    display_name: str | None = None
    comment: str | None = None
    type: str | None = None  # full mode only


class KnSearchObjectType(_Out):
    concept_type: str = "object_type"
    concept_id: str
    concept_name: str
    comment: str | None = None
    tags: list[str] | None = None  # full mode only
    data_properties: list[KnSearchDataProperty] = Field(default_factory=list)
    logic_properties: list[KnSearchLogicProperty] = Field(default_factory=list)
    primary_keys: list[str] | None = None  # full mode only
    display_key: str | None = None  # full mode only
    sample_data: dict[str, Any] | None = None  # only with include_sample_data


class KnSearchRelationType(_Out):
    concept_type: str | None = "relation_type"  # full mode only
    concept_id: str
    concept_name: str
    comment: str | None = None  # full mode only
    source_object_type_id: str
    target_object_type_id: str
    source_object_type_name: str | None = None
    target_object_type_name: str | None = None


class KnSearchActionType(_Out):
    id: str
    name: str
    object_type_id: str = ""
    object_type_name: str = ""
    comment: str | None = None
    tags: list[str] = Field(default_factory=list)
    kn_id: str


class KnSearchNode(_Out):
    object_type_id: str
    object_type_name: str = ""
    instance_name: str = ""
    unique_identities: dict[str, Any] = Field(default_factory=dict)
    properties: dict[str, Any] = Field(default_factory=dict)
    score: float = 0.0


class KnSearchResponse(_Out):
    object_types: list[KnSearchObjectType] = Field(default_factory=list)
    relation_types: list[KnSearchRelationType] = Field(default_factory=list)
    action_types: list[KnSearchActionType] = Field(default_factory=list)
    nodes: list[KnSearchNode] = Field(default_factory=list)
    message: str = ""
    session_id: str | None = None
    contextual_knowledge: ContextualKnowledge | None = None

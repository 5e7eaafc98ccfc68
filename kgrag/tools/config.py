"""Settings of the KG tools (spec kg-tools.md, the specification of the KG tools for LLM agents, §6), with
the spec's defaults."""

from __future__ import annotations

from pydantic import BaseModel, Field


class KGToolsConfig(BaseModel):
    """Knobs of :class:`~kgrag.tools.session.KGSession` and :class:`~kgrag.tools.client.KGClient`."""

    kg_top_k: int = Field(10, ge=1, description="relations returned by one get_relations")
    max_calls: int = Field(10, ge=1, description="KG queries allowed per question")
    limit_per_relation: int = Field(5, ge=1, description="triples per relation in get_triples")
    cvt_limit_per_relation: int = Field(15, ge=1, description="regular triples per relation when CVTs were found")
    max_relations_per_call: int = Field(4, ge=1, description="relations honoured in one get_triples")
    timeout: float = Field(120.0, gt=0, description="seconds per SPARQL query")
    relation_query_limit: int = Field(100, ge=1, description="LIMIT of the outgoing/incoming relation queries")
    cvt_relation_limit: int = Field(50, ge=1, description="LIMIT of the relation queries on a CVT node")
    llm_filter_threshold: int = Field(10, ge=0, description="LLM filter only when more candidates than this")
    flatten_bm25_top: int = Field(50, ge=1, description="flatten candidates kept by the global BM25 ranking")
    flatten_final_top: int = Field(8, ge=1, description="flatten relations kept after the (LLM) filter")
    filter_model: str = Field("gpt-4o-mini", description="model of the relation filter (LLM endpoint)")
    filter_attempts: int = Field(3, ge=1, description="LLM filter tries (exponential backoff in between)")
    filter_backoff: float = Field(1.0, ge=0, description="first backoff in seconds (doubles, capped at 4 s)")
    seed: int = Field(0, description="seed of the shuffles and samples (same inputs + seed → same outputs)")
    case_insensitive_names: bool = Field(
        True, description="resolve names case-insensitively when no exact match (a scan: disable on full Freebase)"
    )

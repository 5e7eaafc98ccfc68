"""kn_search: concept + semantic instance recall over a knowledge network (spec kn-search.md, the kn_search
API specification of concept and instance recall), and ``context_search``: the same plus contextual recall
(spec contextual-recall.md, the specification of recalling how a question's words are stored). See
:mod:`kgrag.search.pipeline`."""

from kgrag.search.kn_models import (
    KnSearchActionType,
    KnSearchNode,
    KnSearchObjectType,
    KnSearchRelationType,
    KnSearchRequest,
    KnSearchResponse,
    RetrievalConfig,
    RetrievalConfigIn,
    merge_retrieval_config,
)
from kgrag.search.pipeline import context_search, kn_search
from kgrag.search.recall import default_reranker

__all__ = [
    "KnSearchActionType",
    "KnSearchNode",
    "KnSearchObjectType",
    "KnSearchRelationType",
    "KnSearchRequest",
    "KnSearchResponse",
    "RetrievalConfig",
    "RetrievalConfigIn",
    "context_search",
    "default_reranker",
    "kn_search",
    "merge_retrieval_config",
]

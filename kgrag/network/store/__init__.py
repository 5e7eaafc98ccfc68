"""``NetworkStore``: knowledge networks in SQL (SQLAlchemy 2), implementing :class:`OntologyService` and
:class:`ContextStore` (:mod:`kgrag.network.service`).

Storage (see :mod:`kgrag.network.tables`): schema rows, instances with JSON properties, links, an FTS5 text index
(jieba tokens) for ``match`` and float32 embeddings for ``knn``. SQLite is the default (``Settings.db_url``);
PostgreSQL (``postgresql+psycopg://…``) is the scale path and gives the same results: a GIN index over the stored
tokens with FTS5's bm25 computed in SQL, exact float32 vectors in ``bytea`` (no pgvector in Debian bookworm), see
:mod:`kgrag.network.tables` and :mod:`kgrag.network.store.index`.

:class:`NetworkStore` is composed by job, one module each:

- :mod:`~kgrag.network.store.core` — engine, schema reads and their per-version cache (``get_network``,
  ``network_version``, ``list_networks``, ``network_stats``).
- :mod:`~kgrag.network.store.load` — ``load`` (validation, derived rows, one transaction) and ``delete``.
- :mod:`~kgrag.network.store.index` — the text and vector indexes: ``match_scores``, ``knn_scores``,
  ``representable``, ``search_object_types`` / ``search_relation_types``.
- :mod:`~kgrag.network.store.query` — ``query_instances``, ``compile``, ``get_instances``, ``sample_instance``,
  counts, ``instance_names``, ``link_cardinality``, ``query_path``.

Texts the embedder cannot represent (mostly unknown tokens — Chinese with the default English MiniLM) get no
vector: see :meth:`NetworkStore.representable`. Every cache (schemas, vectors, names, cardinalities) is kept per
network version (each network row carries a version uuid that every query checks), so a re-load is seen at once.
"""

from __future__ import annotations

from kgrag.network.model import PathHit
from kgrag.network.store.index import fts_query, index_tokens
from kgrag.network.store.load import LoadMixin, LoadStats
from kgrag.network.store.query import QueryMixin, list_fields

__all__ = ["LoadStats", "NetworkStore", "PathHit", "fts_query", "index_tokens", "list_fields"]


class NetworkStore(LoadMixin, QueryMixin):
    """Knowledge networks in a SQL database; see the module docstring.

    ``embedder`` defaults to ``Embedder.from_settings()`` (created on first need: loading or a knn query).
    """

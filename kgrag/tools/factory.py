"""Build a :class:`KGSession` for a prepared KG from its spec and the settings (store, namespace, filter). The
spec is resolved from a name once, at the caller's edge (a CLI command, a route, an MCP tool), and passed in.

    open_session(dataset_spec("demo", settings), question="who directed Carnival Lights?").run(
        'get_relations("Carnival Lights")')
"""

from __future__ import annotations

from collections.abc import Sequence

from kgrag.config import Settings, get_settings
from kgrag.data.spec import DatasetSpec, imported_namespace
from kgrag.graph import GraphStore
from kgrag.graph.versions.stores import open_store
from kgrag.llm.accounting import UsageLedger
from kgrag.llm.client import ChatClient
from kgrag.tools.client import KGClient, looks_like_id
from kgrag.tools.config import KGToolsConfig
from kgrag.tools.filter import LLMRelationFilter, OfflineRelationFilter, RelationFilter
from kgrag.tools.relations import RelationFilters
from kgrag.tools.session import KGSession


def make_relation_filter(settings: Settings, config: KGToolsConfig, ledger: UsageLedger | None = None) -> RelationFilter:
    """The LLM filter when ``KGRAG_LLM_BASE_URL`` is set (its own retry loop: the client does not retry),
    else the LLM-free BM25 + embedding filter."""
    if settings.llm_enabled:
        client = ChatClient.from_settings(settings, ledger=ledger, max_retries=0)
        return LLMRelationFilter(client, model=config.filter_model, attempts=config.filter_attempts,
                                 backoff=config.filter_backoff)
    return OfflineRelationFilter()


def make_client(store: GraphStore, spec: DatasetSpec, config: KGToolsConfig) -> KGClient:
    """The KG tools' client on the KG's namespace. A KG registered on an endpoint (Freebase-sized, not ours to
    scan) resolves names exactly only: the case-insensitive fallback is a scan of every name."""
    base, lang = spec.namespace or imported_namespace(spec.name), spec.lang
    return KGClient(store, base=base, timeout=config.timeout, lang=lang,
                    case_insensitive_names=config.case_insensitive_names and spec.reader != "endpoint")


def topic_mapping(client: KGClient, topics: Sequence[str]) -> dict[str, str]:
    """``{id: name}`` for topic entities given as names or ids (names resolved by SPARQL when possible)."""
    mapping: dict[str, str] = {}
    for topic in topics:
        if looks_like_id(topic):
            mapping[topic] = client.entity_name(topic) or topic
        else:
            entity_id = client.resolve_entity(topic)
            if entity_id:
                mapping[entity_id] = topic
    return mapping


def relation_labels(dataset: str, settings: Settings | None = None) -> dict[str, str]:
    """The prepared graph's labels of relations that kept an opaque id (``P19`` → ``出生地``,
    :func:`kgrag.graph.imported.opaque_relation_labels`); ``{}`` when it has none or is not prepared here."""
    from kgrag.graph.versions.version_file import graph_file

    path = graph_file((settings or get_settings()).dataset_dir(dataset))
    if not path.is_file():
        return {}
    from kgrag.graph.csr import CSRGraph
    from kgrag.graph.imported import opaque_relation_labels

    try:
        return opaque_relation_labels(CSRGraph.load(path))
    except (OSError, ValueError):  # an unreadable or old graph file: the ids alone
        return {}


def open_session(spec: DatasetSpec, question: str = "", topics: Sequence[str] = (), settings: Settings | None = None,
                 config: KGToolsConfig | None = None, store: GraphStore | None = None,
                 ledger: UsageLedger | None = None) -> KGSession:
    """A session on the KG's store (``store``, else :func:`~kgrag.graph.versions.stores.open_store`: the
    endpoint when one is set, else the embedded store)."""
    settings = settings or get_settings()
    config = config or KGToolsConfig(timeout=settings.sparql_timeout, seed=settings.seed)
    client = make_client(store or open_store(spec, settings), spec, config)
    return KGSession(client, question=question, topic_entities=topic_mapping(client, topics), config=config,
                     filters=RelationFilters.from_data_dir(settings.data_dir),
                     relation_filter=make_relation_filter(settings, config, ledger),
                     relation_labels=relation_labels(spec.name, settings))


def follow_version(session: KGSession, store: GraphStore) -> None:
    """Point a live session at ``store`` when its KG has a new version (:class:`kgrag.graph.versions.stores.LiveStores`
    gave another store): its next query reads the new version; its trace and call count stay."""
    if session.client.store is not store:
        session.client.store = store
        for cache in (session._rel_cache, session._ranked_cache, session._name_cache):  # the old version's answers
            cache.clear()

"""Contextual recall (spec contextual-recall.md, the specification of recalling how a question's words are
stored): after kn_search's schema recall, the preparatory knowledge a downstream agent needs to write a query
that matches how the data is stored.

    knowledge = contextual_recall(request, store, concepts)  # concepts: kn_search's response for request
    knowledge.keyword_mappings[0].storage_forms  # 上气道梗阻 exact / 上、下气道梗阻 contains …

Runs on a :class:`kgrag.network.service.ContextStore`; the entry points that run kn_search first
(``context_search``, ``kn_search`` with ``include_context``) are in :mod:`kgrag.search.pipeline`.

Stages (spec §3.1): 1 keywords (:mod:`kgrag.search.keywords`; an LLM when ``KGRAG_LLM_BASE_URL`` is set, validated,
with the rules as fallback) → 2/3 keyword → type mapping and storage forms (:mod:`kgrag.search.storage_forms`) →
4 attribute formats and 6 primary fields (:mod:`kgrag.search.formats`) → 5 relation patterns
(:mod:`kgrag.search.patterns`) → 7 assembly. The per-keyword, per-attribute, per-relation and per-type recalls are
independent and run concurrently (§6.1.1, a thread pool) when the store says its reads gain from it
(``concurrent_reads``: a database server); on SQLite, in-process and CPU-bound, they run one after another.

Sessions (§6.1.3, §6.3): with a ``session_id`` every recalled item is kept per (session, network version), and a
later turn of the same session only recalls what is new — old keywords, attributes, relations and types cost no
query. Failures degrade (§7.2.3): a failing part is left out, ``errors`` says which and why, the rest is returned.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from kgrag.config import get_settings
from kgrag.llm.client import ChatClient
from kgrag.llm.json_output import chat_json
from kgrag.llm.prompts import load_prompt
from kgrag.network.schema.model import KnowledgeNetwork, ObjectType
from kgrag.network.service import ContextStore
from kgrag.search.context_models import (
    AttributeCondition,
    AttributeConditionIn,
    AttributeFormat,
    ContextConfig,
    ContextualKnowledge,
    Extraction,
    KeywordMapping,
    PrimaryFields,
    RelationPattern,
)
from kgrag.search.formats import (
    attribute_candidates,
    attribute_format,
    categorical_candidates,
    primary_fields,
)
from kgrag.search.keywords import Lexicon, extract_keywords
from kgrag.search.kn_models import KnSearchRequest, KnSearchResponse
from kgrag.search.patterns import relation_pattern
from kgrag.search.storage_forms import map_keyword

log = logging.getLogger(__name__)

__all__ = ["ContextSessions", "attach_context", "contextual_recall", "validate_attribute_conditions"]

WORKERS = 4
#: a fuzzy form this close to the keyword seeds the relation-path query like an exact or contains form
CLOSE_FORM = 0.6
MSG_PARTIAL = "部分上下文召回失败，已返回其余结果："


@dataclass
class _Session:
    version: str
    keywords: dict[str, list[KeywordMapping]] = field(default_factory=dict)
    attributes: dict[str, list[AttributeFormat]] = field(default_factory=dict)
    relations: dict[str, RelationPattern] = field(default_factory=dict)
    primary: dict[str, PrimaryFields] = field(default_factory=dict)


class ContextSessions:
    """Recalled items per (session id, kn_id), for the network version they were recalled on (LRU)."""

    def __init__(self, size: int = 256) -> None:
        self.size = size
        self._sessions: OrderedDict[tuple[str, str], _Session] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, session_id: str | None, kn_id: str, version: str) -> _Session:
        if not session_id:
            return _Session(version)
        with self._lock:
            session = self._sessions.get((session_id, kn_id))
            if session is None or session.version != version:
                session = self._sessions[(session_id, kn_id)] = _Session(version)
            self._sessions.move_to_end((session_id, kn_id))
            while len(self._sessions) > self.size:
                self._sessions.popitem(last=False)
            return session


DEFAULT_SESSIONS = ContextSessions()
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()
_lexicons: dict[tuple[str, str], Lexicon] = {}  # (network, version: one load's uuid) -> its lexicon


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(WORKERS, thread_name_prefix="context-recall")
        return _pool


def lexicon_for(store: ContextStore, kn_id: str) -> Lexicon:
    """The network's :class:`Lexicon`, built once per network version (shared by every store object on it)."""
    key = (kn_id, store.network_version(kn_id))
    lexicon = _lexicons.get(key)
    if lexicon is None:
        if len(_lexicons) > 16:
            _lexicons.clear()
        lexicon = _lexicons[key] = Lexicon.from_network(store.get_network(kn_id), store.instance_names(kn_id))
    return lexicon


def validate_attribute_conditions(conditions: list[AttributeConditionIn], network: KnowledgeNetwork) -> None:
    """Raise ``ValueError`` naming an unknown object type or attribute of caller-given conditions."""
    types = {ot.id: ot for ot in network.object_types}
    for i, cond in enumerate(conditions):
        scope = [types[cond.object_type_id]] if cond.object_type_id in types else list(types.values())
        if cond.object_type_id is not None and cond.object_type_id not in types:
            raise ValueError(f"attribute_conditions[{i}]: unknown object type {cond.object_type_id!r}")
        if not any(p.name == cond.attribute for ot in scope for p in ot.data_properties):
            where = f"object type {cond.object_type_id!r}" if cond.object_type_id else f"network {network.kn_id!r}"
            raise ValueError(f"attribute_conditions[{i}]: unknown attribute {cond.attribute!r} in {where}")


def _llm_extraction(question: str) -> Extraction | None:
    """Stage 1 by the configured LLM (validated against :class:`Extraction`), or None when none is configured."""
    settings = get_settings()
    if not settings.llm_enabled:
        return None
    client = ChatClient.from_settings(settings)
    messages = [{"role": "system", "content": load_prompt("keyword_extraction")},
                {"role": "user", "content": question}]
    extraction = chat_json(client, messages, Extraction, max_attempts=2, instruct=False, temperature=0.0)
    return extraction.model_copy(update={"source": "llm"})


def extract(question: str, lexicon: Lexicon, use_llm: bool = True) -> tuple[Extraction, str | None]:
    """Stage 1: the LLM's extraction when configured and valid, else the rules'. Returns the extraction and,
    when the LLM failed, why (the rules' result is used then)."""
    rules = extract_keywords(question, lexicon)
    if not use_llm:
        return rules, None
    try:
        llm = _llm_extraction(question)
    except Exception as exc:  # noqa: BLE001 - any LLM failure falls back to the rules
        return rules, f"keyword extraction by LLM failed ({type(exc).__name__}: {exc}); rule-based result used"
    if llm is None:
        return rules, None
    # the LLM's relation words get the relation types the lexicon knows them by
    for word in llm.relation_words:
        word.relation_type_ids = sorted(lexicon.relation_ids(word.text))
    for entity in llm.entities:
        entity.in_dictionary = entity.text in lexicon.names
    return llm, None


def _related_types(extraction: Extraction, network: KnowledgeNetwork) -> set[str]:
    """Types at the other end of relations the question names (X有哪些症状 -> X is a has_symptom source)."""
    named = {rid for word in extraction.relation_words for rid in word.relation_type_ids}
    related: set[str] = set()
    for rt in network.relation_types:
        if rt.id in named:
            related.add(rt.source_object_type_id)
    return related


def contextual_recall(
    request: KnSearchRequest,
    service: ContextStore,
    concepts: KnSearchResponse,
    sessions: ContextSessions | None = None,
    use_llm: bool = True,
) -> ContextualKnowledge:
    """Stages 1–7 for ``request`` given kn_search's ``concepts`` (its object and relation types).

    Raises ``ValueError`` for caller-given ``attribute_conditions`` naming unknown types or attributes; every
    other failure is reported in ``errors`` with the rest of the knowledge returned."""
    config = request.context_config or ContextConfig()
    kn_id = request.kn_id
    network = service.get_network(kn_id)
    if request.attribute_conditions:
        validate_attribute_conditions(request.attribute_conditions, network)
    types = {ot.id: ot for ot in network.object_types}
    session = (sessions or DEFAULT_SESSIONS).get(request.session_id, kn_id, service.network_version(kn_id))
    errors: list[str] = []
    lexicon = lexicon_for(service, kn_id)
    extraction, llm_error = extract(request.query, lexicon, use_llm)
    if llm_error:
        errors.append(llm_error)
    recalled = [types[o.concept_id] for o in concepts.object_types if o.concept_id in types]
    recalled_ids = {ot.id for ot in recalled}
    related = _related_types(extraction, network)
    searchable = recalled + [ot for ot in network.object_types if ot.id not in recalled_ids]

    conditions = list(extraction.attribute_values) + [
        AttributeCondition(text=f"{c.attribute} {c.operation} {c.value}", attribute=c.attribute,
                           operation=c.operation, value=c.value, unit=c.unit, confidence=1.0)
        for c in request.attribute_conditions or []
    ]
    explicit = {f"{c.attribute} {c.operation} {c.value}": c for c in request.attribute_conditions or []}
    entities = extraction.entities[: config.max_keywords]
    relation_ids = [r.concept_id for r in concepts.relation_types]
    named = [rid for w in extraction.relation_words for rid in w.relation_type_ids]
    relation_ids = list(dict.fromkeys(named + relation_ids))[: config.max_relations]

    jobs: dict[tuple[str, str], Callable[[], Any]] = {}
    for entity in entities:
        if entity.text not in session.keywords:
            known = {t for t, _ in lexicon.names.get(entity.text, [])}
            jobs[("keyword", entity.text)] = (
                lambda kw=entity.text, kt=known: map_keyword(service, kn_id, kw, searchable, config, recalled_ids,
                                                             related, kt, use_llm))
    for cond in conditions:
        if cond.text not in session.attributes:
            given = explicit.get(cond.text)
            scope = ([types[given.object_type_id]] if given is not None and given.object_type_id else
                     searchable)
            jobs[("attribute", cond.text)] = lambda c=cond, s=scope: _formats_for(service, kn_id, c, s, config)
    # primary fields of the recalled types (the spec's "相关对象类型")
    for ot in recalled:
        if ot.id not in session.primary:
            jobs[("primary", ot.id)] = lambda o=ot: primary_fields(service, kn_id, o, config.primary_field_samples)
    concurrent = service.concurrent_reads
    results = _run(jobs, errors, concurrent)
    for (kind, key), value in results.items():
        if kind == "keyword":
            session.keywords[key] = value
        elif kind == "attribute":
            session.attributes[key] = value
        elif kind == "primary":
            session.primary[key] = value

    mappings = [m for e in entities for m in session.keywords.get(e.text, [])]
    # relation patterns need the keyword forms (场景2): the best mapping's forms per type
    forms_by_type: dict[str, list[str]] = {}
    for m in mappings:
        if m.object_type_id and m.match_confidence > 0:
            forms_by_type.setdefault(m.object_type_id, []).extend(
                f.form for f in m.storage_forms if f.match_type != "fuzzy" or f.similarity >= CLOSE_FORM)
    rel_jobs: dict[tuple[str, str], Callable[[], Any]] = {}
    relation_types = {rt.id: rt for rt in network.relation_types}
    relation_keys: list[str] = []  # a pattern depends on the relation and the source forms it was sampled with
    for rid in relation_ids:
        rt = relation_types.get(rid)
        if rt is None:
            continue
        forms = forms_by_type.get(rt.source_object_type_id, [])[: config.forms_per_strategy]
        back = forms_by_type.get(rt.target_object_type_id, [])[: config.forms_per_strategy]
        key = f"{rid}|{'|'.join(forms)}|{'|'.join(back)}"
        relation_keys.append(key)
        if key not in session.relations:
            rel_jobs[("relation", key)] = lambda r=rt, f=forms, b=back: relation_pattern(
                service, kn_id, r, types, config, f, b)
    for (_, key), value in _run(rel_jobs, errors, concurrent).items():
        session.relations[key] = value

    return ContextualKnowledge(
        keyword_mappings=mappings,
        attribute_formats=[f for c in conditions for f in session.attributes.get(c.text, [])],
        relation_patterns=[session.relations[k] for k in relation_keys if k in session.relations],
        object_type_primary_fields=[session.primary[ot.id] for ot in recalled if ot.id in session.primary],
        extraction=extraction,
        errors=errors,
    )


def _formats_for(service: ContextStore, kn_id: str, cond: AttributeCondition, object_types: list[ObjectType],
                 config: ContextConfig) -> list[AttributeFormat]:
    """An attribute condition's formats: properties named by its words/unit, else where its value is stored."""
    named = attribute_candidates(cond, object_types)[:2]
    if named:
        return [attribute_format(service, kn_id, cond, ot, prop, config) for ot, prop in named]
    if isinstance(cond.value, str):
        return [attribute_format(service, kn_id, cond, ot, prop, config, stored_value=value)
                for ot, prop, value in categorical_candidates(service, kn_id, cond, object_types)[:2]]
    return []


def _run(jobs: dict[tuple[str, str], Callable[[], Any]], errors: list[str], concurrent: bool = True
         ) -> dict[tuple[str, str], Any]:
    """Run independent recalls (on the thread pool when ``concurrent``); a failing one is reported in ``errors``
    and left out."""
    if not jobs:
        return {}
    calls = jobs
    if concurrent and len(jobs) > 1:
        futures = {key: _executor().submit(job) for key, job in jobs.items()}
        calls = {key: future.result for key, future in futures.items()}
    out: dict[tuple[str, str], Any] = {}
    for key, call in calls.items():
        try:
            out[key] = call()
        except Exception as exc:  # noqa: BLE001 - §7.2.3: partial results plus what failed
            log.warning("contextual recall %s %r failed: %s", key[0], key[1], exc)
            errors.append(f"{key[0]} {key[1]!r}: {type(exc).__name__}: {exc}")
    return out


def attach_context(response: KnSearchResponse, request: KnSearchRequest, service: ContextStore,
                   sessions: ContextSessions | None = None, use_llm: bool = True) -> KnSearchResponse:
    """Add ``contextual_knowledge`` to a kn_search ``response``; a partial failure adds a note to ``message``."""
    knowledge = contextual_recall(request, service, response, sessions, use_llm)
    response.contextual_knowledge = knowledge
    if knowledge.errors:
        note = MSG_PARTIAL + "；".join(knowledge.errors)
        response.message = f"{response.message}；{note}" if response.message else note
    return response


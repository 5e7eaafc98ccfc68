"""One agent's KG session for one question (spec kg-tools.md, the specification of the KG tools for LLM
agents): ``get_relations`` / ``get_triples``.

A :class:`KGSession` owns everything that lives for one question — the bidirectional entity registry, the
seen-relation set, the per-entity relation cache, CVT flatten mappings, pending flatten relations, the last
texts shown to the model and the trace — while the stateless :class:`~kgrag.tools.client.KGClient` runs SPARQL.
:meth:`KGSession.run` takes what the model wrote inside ``<kg-query>`` and returns exactly the text the model
sees next. It never raises on the model's input: bad queries, unknown entities, unseen relations and store
failures all come back as text (and as ``error`` records in the trace), and the session stays usable.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kgrag.errors import KgragError
from kgrag.graph.iri import ENTITY_ID_RE, RELATION_RE
from kgrag.rank.bm25 import BM25Index
from kgrag.tools.client import KGClient, Node, looks_like_id
from kgrag.tools.config import KGToolsConfig
from kgrag.tools.filter import OfflineRelationFilter, RelationFilter
from kgrag.tools.parse import GetRelations, GetTriples, ParseError, extract_query, parse_query
from kgrag.tools.relations import RelationFilters, flatten_relation, normalize_relation

log = logging.getLogger(__name__)

NO_RELATIONS = "No relations found."
NO_TRIPLES = "No triples found."


@dataclass
class FlattenCandidate:
    flatten_relation: str
    original_relation: str
    cvt_node_id: str
    cvt_relation: str
    direction: str  # "out": entity -orig-> cvt -cvt_rel-> x ; "in": x -cvt_rel-> cvt -orig-> entity


@dataclass
class TriplesResult:
    """``get_triples`` result (spec §3.5.7): triples as dicts and the CVT information."""

    triples: list[dict[str, str]] = field(default_factory=list)
    cvt_info: list[dict[str, Any]] = field(default_factory=list)


def format_relations(relations: list[str], labels: Mapping[str, str] | None = None) -> str:
    """One relation a line; a relation with an opaque id and a label reads ``P19 (出生地)`` (``labels``)."""
    if not relations:
        return NO_RELATIONS
    return "\n".join(shown_relation(r, labels) for r in relations)


def shown_relation(relation: str, labels: Mapping[str, str] | None = None) -> str:
    """``P19 (出生地)`` where ``labels`` has the relation's label, else the relation."""
    label = (labels or {}).get(relation)
    return f"{relation} ({label})" if label else relation


def format_triples(triples: list[dict[str, str]]) -> str:
    return "\n".join(f"[{t['head']}, {t['relation']}, {t['tail']}]" for t in triples) if triples else NO_TRIPLES


def rank_bm25(items: list[str], query: str, texts: list[str] | None = None) -> list[str]:
    """Items ordered by BM25 similarity of their ``texts`` (default: the items) to ``query`` (stable: ties keep
    their order)."""
    if not items or not query.strip():
        return list(items)
    index = BM25Index(texts if texts is not None else items)
    return [items[i] for i, _ in index.top_k(query)]


class KGSession:
    """The KG tools for one question. ``topic_entities`` maps ids to names (or names to ids)."""

    def __init__(
        self,
        client: KGClient,
        question: str = "",
        topic_entities: Mapping[str, str] | None = None,
        config: KGToolsConfig | None = None,
        filters: RelationFilters | None = None,
        relation_filter: RelationFilter | None = None,
        relation_labels: Mapping[str, str] | None = None,
    ) -> None:
        self.client = client
        #: labels of relations that kept an opaque id (``P19`` → ``出生地``): shown, ranked and accepted back
        self.relation_labels = dict(relation_labels or {})
        self._relation_by_label = {label: rel for rel, label in self.relation_labels.items()}
        self.question = question
        self.config = config or KGToolsConfig()
        self.filters = filters or RelationFilters()
        self.relation_filter = relation_filter or OfflineRelationFilter()
        self.rng = random.Random(self.config.seed)
        self.calls = 0
        self.trace: list[dict[str, Any]] = []
        self._entity_registry: dict[str, str] = {}  # lower-cased name -> id
        self._entity_names: dict[str, str] = {}  # id -> name (the other direction of the registry)
        self._seen_relations_set: set[str] = set()
        self._last_relations_text = ""
        self._last_entities_text = ""
        self._rel_cache: dict[str, list[str]] = {}
        self._ranked_cache: dict[tuple[str, tuple[str, ...], int], list[str]] = {}
        self._cvt_mapping: dict[str, tuple[str, str, str, str]] = {}
        self._pending_flatten_relations: dict[str, list[str]] = {}
        self._name_cache: dict[str, str] = {}
        self.filter_stats = {"calls": 0, "fallbacks": 0}
        self._initial_entity_names: list[str] = []
        for key, value in (topic_entities or {}).items():
            mid, name = (key, value) if looks_like_id(key) else (value, key) if looks_like_id(value) else ("", "")
            if mid and name and ENTITY_ID_RE.match(mid):
                self._register(name, mid)
                if name not in self._initial_entity_names:
                    self._initial_entity_names.append(name)

    def new_question(self, question: str, topic_entities: Mapping[str, str] | None = None) -> None:
        """A follow-up question in the same session (an agent thread): the per-question state starts again (query
        count, seen relations, last texts, ranking cache, trace, topic names); the entity registry and the
        per-entity relation, name and CVT caches are kept, so entities named in earlier turns still resolve."""
        self.question = question
        self.calls = 0
        self.trace = []
        self._seen_relations_set = set()
        self._last_relations_text = self._last_entities_text = ""
        self._ranked_cache = {}
        self._initial_entity_names = []
        for entity_id, name in (topic_entities or {}).items():
            if ENTITY_ID_RE.match(entity_id) and name:
                self._register(name, entity_id)
                self._initial_entity_names.append(name)

    @property
    def known_entities(self) -> dict[str, str]:
        """The registry's ``{id: name}``: every entity the session has resolved or shown so far."""
        return dict(self._entity_names)

    # ------------------------------------------------------------------ public entry point
    @property
    def augmented_question(self) -> str:
        """The question plus the topic entity names (spec §2.2), used for BM25 ranking."""
        return " ".join([self.question, *self._initial_entity_names]).strip()

    def run(self, text: str) -> str:
        """Execute one ``<kg-query>`` (or bare query); returns the text the model sees."""
        return self.execute(parse_query(text), extract_query(text))

    def execute(self, query: GetRelations | GetTriples | ParseError, content: str | None = None) -> str:
        """Execute a parsed query (``run`` without the parsing: a tool-calling agent builds the query itself);
        counted against ``max_calls`` and traced like ``run``."""
        if self.calls >= self.config.max_calls:
            msg = f"[KG query limit reached: at most {self.config.max_calls} queries per question]"
            self.trace.append({"type": "max_calls_reached", "limit": self.config.max_calls, "content": msg})
            return msg
        self.calls += 1
        if content is None:
            content = (f"get_relations({query.entity!r})" if isinstance(query, GetRelations) else
                       f"get_triples({query.entity!r}, {list(query.relations)!r})" if isinstance(query, GetTriples)
                       else query.query)
        self.trace.append({"type": "kg_query", "tag": "kg-query", "content": content, "call_number": self.calls})
        try:
            if isinstance(query, GetRelations):
                result = self.get_relations(query.entity)
            elif isinstance(query, GetTriples):
                result = self.get_triples(query.entity, list(query.relations))
            else:
                result = query.message
                self.trace.append({"type": "error", "content": result})
        except KgragError as exc:  # the store or the LLM failed: say so, keep the session intact
            result = f"[KG query failed: {exc}]"
            self.trace.append({"type": "error", "content": result})
        self.trace.append({"type": "information", "tag": "information", "content": result, "call_number": self.calls})
        return result

    # ------------------------------------------------------------------ entities
    def _register(self, name: str, entity_id: str) -> None:
        """Remember ``name ↔ id`` both ways (names by lower-case key)."""
        if name:
            self._entity_registry[name.lower()] = entity_id
            self._entity_names[entity_id] = name
        else:
            self._entity_names.setdefault(entity_id, entity_id)

    def resolve(self, entity: str) -> str | None:
        """Entity id for what the model wrote: ids used directly, then the registry, then SPARQL (spec §2.1)."""
        entity = entity.strip()
        if not entity or not entity.isprintable() or len(entity) > 500:
            return None
        try:
            entity.encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates (e.g. from JSON-decoded model text)
            return None
        if looks_like_id(entity):
            return entity if ENTITY_ID_RE.match(entity) else None
        hit = self._entity_registry.get(entity.lower())
        if hit:
            return hit
        resolved = self.client.resolve_entity(entity)
        if resolved:
            self._register(entity, resolved)
        return resolved

    def _entity_error(self, entity: str) -> str:
        msg = "Invalid entity. Use an entity returned by the previous step and copy it exactly."
        if self._last_entities_text:
            msg += "\n\nLast entities (names only):\n\n" + self._last_entities_text
        self.trace.append({"type": "error", "content": msg, "entity": entity})
        return msg

    def _relation_error(self, relation: str) -> str:
        msg = (f"The relation '{relation}' is not in the latest predicate list. "
               f"Choose predicates from the list below:\n\n{self._last_relations_text}")
        self.trace.append({"type": "error", "content": msg, "relation": relation})
        return msg

    def _entity_name(self, entity_id: str, fallback: str) -> str:
        if entity_id not in self._name_cache:
            self._name_cache[entity_id] = self.client.entity_name(entity_id)
        return self._name_cache[entity_id] or fallback

    # ------------------------------------------------------------------ get_relations (spec §2)
    def candidate_relations(self, entity_id: str, top_k: int) -> list[str]:
        """Spec §2.3: cached out+in relations, pending flatten relations, whitelist (with fallback),
        meaningless filter, BM25 ranking on the augmented question; at most ``top_k``."""
        pending = tuple(self._pending_flatten_relations.get(entity_id, ()))
        key = (entity_id, pending, top_k)  # the question is fixed per session: rank once per relation set
        if key not in self._ranked_cache:
            if entity_id not in self._rel_cache:
                self._rel_cache[entity_id] = self.client.relations(entity_id, self.config.relation_query_limit)
            relations = list(self._rel_cache[entity_id])
            relations += [r for r in pending if r not in relations]
            relations = self.filters.drop_meaningless(self.filters.apply_whitelist(relations))
            texts = [shown_relation(r, self.relation_labels) for r in relations] if self.relation_labels else None
            self._ranked_cache[key] = rank_bm25(relations, self.augmented_question, texts)[:top_k]
        return list(self._ranked_cache[key])

    def _filter(self, candidates: list[str], entity_name: str, top_k: int, flatten: bool) -> list[str]:
        """Spec §2.4: shuffle, then the relation filter; its fallback is the first ``top_k`` in the given order."""
        shuffled = list(candidates)
        self.rng.shuffle(shuffled)
        outcome = self.relation_filter.select(shuffled, candidates[:top_k], self.question, entity_name, top_k,
                                              flatten=flatten)
        self.filter_stats["calls"] += 1
        self.filter_stats["fallbacks"] += outcome.strategy == "fallback"
        self.trace.append({"type": "filter", "flatten": flatten, "strategy": outcome.strategy,
                           "attempts": outcome.attempts, "error": outcome.error, "candidates": len(candidates),
                           "selected": outcome.relations})
        return outcome.relations

    def get_relations(self, entity: str) -> str:
        entity_id = self.resolve(entity)
        if not entity_id:
            return self._entity_error(entity)
        relations = self.candidate_relations(entity_id, self.config.kg_top_k * 3)
        if len(relations) > self.config.llm_filter_threshold:
            relations = self._filter(relations, entity, self.config.kg_top_k, flatten=False)
        relations = relations[: self.config.kg_top_k]
        text = format_relations(relations, self.relation_labels)
        self._seen_relations_set.update(relations)
        self._last_relations_text = text
        self._last_entities_text = ""
        self.trace.append({"type": "tool_call", "tool": "get_relations",
                           "args": {"entity": entity, "entity_resolved": entity_id},
                           "result_count": len(relations), "tool_output": text})
        return text

    # ------------------------------------------------------------------ get_triples (spec §3)
    def get_triples(self, entity: str, relations: list[str]) -> str:
        relations = list(dict.fromkeys(relations))[: self.config.max_relations_per_call]
        entity_id = self.resolve(entity)
        if not entity_id:
            return self._entity_error(entity)
        normalized: list[str] = []
        for rel in relations:
            norm = normalize_relation(self._unlabelled(rel), self.client.base)
            if (self._seen_relations_set and norm not in self._seen_relations_set) or not RELATION_RE.match(norm):
                return self._relation_error(rel)
            normalized.append(norm)
        result = self.triples(entity_id, normalized, entity)
        for t in result.triples:
            for name, node_id in ((t["head"], t["head_id"]), (t["tail"], t["tail_id"])):
                if ENTITY_ID_RE.match(node_id):
                    self._register(name if name != node_id else "", node_id)
        text = format_triples(result.triples)
        self._last_entities_text = text
        self._last_relations_text = ""
        record: dict[str, Any] = {"type": "tool_call", "tool": "get_triples",
                                  "args": {"entity": entity, "entity_resolved": entity_id, "relations": relations},
                                  "result_count": len(result.triples), "tool_output": text,
                                  "triples": result.triples}
        if result.cvt_info:
            record["cvt_info"] = result.cvt_info
        self.trace.append(record)
        return text

    def _unlabelled(self, relation: str) -> str:
        """The relation id of what the model copied from a relation list: ``P19 (出生地)`` or the label alone →
        ``P19``; anything else as written."""
        if not self.relation_labels:
            return relation
        text = relation.strip()
        if text in self._relation_by_label:
            return self._relation_by_label[text]
        head, sep, rest = text.partition(" (")
        if sep and rest.endswith(")") and self.relation_labels.get(head) == rest[:-1]:
            return head
        return relation

    def _sample(self, items: list, limit: int) -> list:
        return self.rng.sample(items, limit) if len(items) > limit else items

    def _triple(self, head: Node | tuple[str, str], relation: str, tail: Node | tuple[str, str]) -> dict[str, str]:
        h = (head.label, head.id) if isinstance(head, Node) else head
        t = (tail.label, tail.id) if isinstance(tail, Node) else tail
        return {"head": h[0], "head_id": h[1], "relation": relation, "tail": t[0], "tail_id": t[1]}

    def _flatten_triples(self, entity: tuple[str, str], c: FlattenCandidate) -> list[dict[str, str]]:
        """Spec §3.5.3 ``_query_flatten_relation``: the two-hop query through the CVT, sampled to the limit."""
        lpr = self.config.limit_per_relation
        nodes = self.client.flatten_neighbours(entity[1], c.original_relation, c.cvt_node_id, c.cvt_relation,
                                               c.direction, lpr * 2)
        triples = [self._triple(entity, c.flatten_relation, n) if c.direction == "out"
                   else self._triple(n, c.flatten_relation, entity) for n in nodes]
        return self._sample(triples, lpr)

    def triples(self, entity_id: str, relations: list[str], entity: str = "") -> TriplesResult:
        """Spec §3.5: regular triples per relation, CVT detection and global flattening, flatten relations
        resolved through ``_cvt_mapping``."""
        cfg = self.config
        me = (self._entity_name(entity_id, entity or entity_id), entity_id)
        result = TriplesResult()
        candidates: list[FlattenCandidate] = []
        counter: dict[str, int] = {}
        for rel in dict.fromkeys(relations):
            if rel in self._cvt_mapping:
                original, cvt_id, cvt_rel, direction = self._cvt_mapping[rel]
                # a flatten relation is its two-hop query; self-loops are dropped as in verification (§3.5.5)
                result.triples += self._meaningful(me, FlattenCandidate(rel, original, cvt_id, cvt_rel, direction))
                continue
            regular: list[dict[str, str]] = []
            cvts: list[tuple[str, str]] = []
            for direction, limit in (("out", cfg.limit_per_relation * 2), ("in", cfg.limit_per_relation * 4)):
                for node in self.client.neighbours(entity_id, rel, direction, limit):
                    if node.is_cvt:
                        cvts.append((node.id, direction))
                    else:
                        regular.append(self._triple(me, rel, node) if direction == "out" else self._triple(node, rel, me))
            for cvt_id, direction in cvts:
                cvt_rels = self.filters.apply_whitelist(
                    self.filters.drop_meaningless(self.client.node_relations(cvt_id, direction, cfg.cvt_relation_limit)))
                for cvt_rel in cvt_rels:
                    base = flatten_relation(rel, cvt_rel) if direction == "out" else flatten_relation(cvt_rel, rel)
                    counter[base] = counter.get(base, 0) + 1
                    name = f"{base}_{counter[base]}"
                    if RELATION_RE.match(name):
                        candidates.append(FlattenCandidate(name, rel, cvt_id, cvt_rel, direction))
            result.triples += self._sample(regular, cfg.cvt_limit_per_relation if cvts else cfg.limit_per_relation)
        if candidates:
            self._flatten(me, candidates, result)
        return result

    def _meaningful(self, me: tuple[str, str], c: FlattenCandidate) -> list[dict[str, str]]:
        return [t for t in self._flatten_triples(me, c) if t["head_id"] and t["tail_id"] and t["head_id"] != t["tail_id"]]

    def _flatten(self, me: tuple[str, str], candidates: list[FlattenCandidate], result: TriplesResult) -> None:
        """Spec §3.5.5 global step: BM25 top-50 → verify (drop head_id == tail_id) → filter top-8 → final query."""
        cfg = self.config
        by_name = {c.flatten_relation: c for c in candidates}
        query = f"{self.augmented_question} {me[0]}".strip()
        top = rank_bm25(list(by_name), query)[: cfg.flatten_bm25_top] if self.augmented_question else list(by_name)[: cfg.flatten_bm25_top]
        meaningful = [name for name in top if self._meaningful(me, by_name[name])]
        final = meaningful
        if len(meaningful) > cfg.flatten_final_top:
            final = self._filter(meaningful, me[0], cfg.flatten_final_top, flatten=True)
        selected: list[str] = []
        for name in final[: cfg.flatten_final_top]:
            c = by_name[name]
            triples = self._meaningful(me, c)  # the final query: keep only relations that still give triples
            if not triples:
                continue
            self._cvt_mapping[name] = (c.original_relation, c.cvt_node_id, c.cvt_relation, c.direction)
            selected.append(name)
            result.triples += triples
            result.cvt_info.append({"original_relation": c.original_relation, "cvt_node_id": c.cvt_node_id,
                                    "cvt_relation": c.cvt_relation, "flatten_relation": name,
                                    "direction": c.direction, "flattened_triples": triples})
        if selected:
            pending = self._pending_flatten_relations.setdefault(me[1], [])
            pending += [n for n in selected if n not in pending]
            self._seen_relations_set.update(selected)  # shown to the model: it may ask for them next

"""A question's local graph from a KG that lives only on a SPARQL endpoint: a bounded k-hop expansion of its topic
entities, returned as a small in-memory :class:`~kgrag.graph.csr.CSRGraph` that H-RAG's retriever and reasoner use
exactly as a local graph.

    nbh = expand_neighbourhood(RemoteStore(url, graph=g), ["m.0yr8s"], FREEBASE_NS, ExpansionLimits(hops=2))

Contract:

- ``topics`` are entity IRIs or local ids (``m.0abc``, resolved under ``namespace``); the expansion walks the
  undirected graph: hop ``i`` fetches the out-edges and in-edges of the nodes first reached at hop ``i - 1`` (the
  topics for hop 1), so without caps the result holds exactly the triples incident to a node within ``hops - 1``
  of a topic. Nodes reached at the last hop that have no name (mediator / CVT nodes) get ``cvt_hops`` further hops
  of their own edges, so a CVT's far side is present; a CVT reached by a CVT hop is expanded by the next one.
- Only triples whose relation is under ``namespace`` count, without the name predicate (``type.object.name``) and
  kgrag's value predicate (``kgrag.value``); a relation whose local name is not an identifier
  (:data:`~kgrag.graph.iri.RELATION_RE`) is skipped (counted in ``stats["skipped_relations"]``). Subjects and
  objects are IRIs (blank nodes are skipped: their labels do not survive from one query to the next), or, as
  objects, literals: a literal object is a leaf node, as :mod:`kgrag.data.triples` imports one — keyed by its
  N-Triples form (``"1961"^^<…#gYear>``, ``"x"@en``, ``"x"``), named by its value, id by
  :func:`~kgrag.graph.iri.iri_local_id` — kept when it is untagged (plain or typed) or tagged ``lang``; literals
  in other languages (Freebase's aliases and descriptions in forty languages) are left on the server, and a
  literal is never expanded. kgrag's own stores (the demo, MetaQA, imported graphs) hold values as named entities,
  so there the graph is entity-to-entity.
- Caps, per :class:`ExpansionLimits`: ``per_node`` triples per frontier node and direction, ``per_hop`` new
  triples per hop (over all frontier nodes, taken in key order; a hop stops there and the rest of its frontier is
  not expanded). A hop that hit either is ``truncated`` in ``stats``.
- Query shapes (all SPARQL 1.1, every IRI checked by :func:`~kgrag.graph.sparql.iri`, strings by
  :func:`~kgrag.graph.sparql.literal`): per batch of ``batch`` frontier nodes ONE query, ``VALUES ?n {…}`` with a
  ``UNION`` of the out- and in-edge patterns and ``LIMIT min(2 * per_node * n, ROW_CAP) + 1``. Fewer rows than the
  limit means every edge of the batch came back: the per-node cap is applied here, deterministically (each node's
  edges sorted by relation, then the other end). Where the limit is reached (a hub in the batch), the batch is
  asked again with the cap on the server: a ``UNION`` of one sub-``SELECT … LIMIT per_node + 1`` per node and
  direction (slower to compile, so only then), chunked so a query never returns more than :data:`ROW_CAP` rows
  (under Virtuoso's default ``ResultSetMaxRows``). A node with more than ``per_node`` edges in a direction then
  keeps the first ``per_node + 1`` the server returns (its index order: stable for an unchanged store, not a
  sort), trimmed to ``per_node`` by the same sort. Names (``type.object.name``), ``batch`` nodes per ``VALUES``
  query, once per node: the last hop's new nodes before the CVT hops (an unnamed node is a CVT), the others at
  the end; a name in ``lang`` (keyword, ``"en"`` by default), else an untagged one (smallest value first); nodes
  without either get a second query for a name in any language (smallest ``(lang, value)``).
- The result is deterministic for a given store: keys (IRIs and literal keys) and relations are sorted. ``ids``
  are local ids: the IRI's part after ``namespace`` when it is an entity id (``m.0abc``), else
  :func:`~kgrag.graph.iri.iri_local_id` (a slug + hash, as :mod:`kgrag.graph.imported` mints them); a foreign
  key whose id is already taken falls back to :func:`~kgrag.graph.iri.slug_id` of the whole key, while a
  namespace entity always keeps its own id (so ``namespace + id`` is its IRI on the store).
- A query that times out or fails raises :class:`~kgrag.errors.SparqlError` with one line naming the endpoint and
  the step (``hop 2 of 3``, ``CVT hop 1 of 1``, ``names``).

Run: ``python -c "from kgrag.graph.remote_store import RemoteStore as R; from kgrag.hrag.online.sparql_neighbourhood import expand_neighbourhood as x; print(x(R('http://127.0.0.1:7878/query'), ['m.0yr8s'], 'http://rdf.freebase.com/ns/').stats)"``
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from kgrag.data.triples import ALIAS_PREDICATES
from kgrag.errors import SparqlError
from kgrag.graph.csr import CSRGraph
from kgrag.graph.iri import (
    ENTITY_ID_RE,
    NAME_PREDICATE,
    RELATION_RE,
    VALUE_PREDICATE,
    XSD,
    iri_local_id,
    slug_id,
)
from kgrag.graph.sparql import iri, literal
from kgrag.graph.store import GraphStore, Row, Term

#: Freebase's other-name predicate, in any namespace (as :mod:`kgrag.data.triples` reads it)
_OWN_ALIAS = "/common.topic.alias"

__all__ = ["ROW_CAP", "ExpansionLimits", "Neighbourhood", "expand_neighbourhood"]

#: most rows one query may return (a LIMIT below Virtuoso's Debian default ``ResultSetMaxRows`` of 10,000, which
#: it would otherwise cut silently and :class:`~kgrag.graph.remote_store.RemoteStore` report as an error)
ROW_CAP = 9_998
_LANG_RE = re.compile(r"^[a-zA-Z]{1,8}(-[a-zA-Z0-9]{1,8})*\Z")
_PLAIN_TYPES = (f"{XSD}string", "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString")


class ExpansionLimits(BaseModel):
    """How far and how much a neighbourhood expansion fetches (see the module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    hops: int = Field(3, ge=1, le=4, description="hops from the topic entities (MetaQA questions need up to 3)")
    per_hop: int = Field(3000, ge=1, le=1_000_000, description="most new triples fetched per hop, over all "
                         "frontier nodes; the hop stops there and is marked truncated")
    per_node: int = Field(200, ge=1, le=4_000, description="most triples kept per frontier node and direction, "
                          "so one hub cannot take a hop's budget")
    cvt_hops: int = Field(1, ge=0, le=2, description="extra hops through unnamed (CVT) nodes reached at the last "
                          "hop, so a CVT's far side is present")
    batch: int = Field(64, ge=1, le=1_000, description="frontier nodes per edge query (VALUES), nodes per name query")
    timeout_s: float = Field(20.0, gt=0, le=3_600, description="seconds per SPARQL query")


@dataclass
class Neighbourhood:
    """The local graph of a question's topics (keys: full IRIs, or a literal's N-Triples form; ids: local ids;
    names: "" for unnamed nodes; relations: local names under the namespace), the topics' rows in it, and
    ``stats``: ``hops`` (one dict per hop, CVT hops last: hop, kind ``hop``/``cvt``, frontier, queried, rows,
    triples (new ones), capped_nodes (per_node hit), budget_hit (per_hop hit), truncated (either), fallbacks
    (batches asked again with the cap on the server), unexpanded, queries, ms), ``names`` (nodes, named, queries,
    ms), ``nodes``, ``triples``, ``queries``, ``truncated``, ``skipped_relations`` (rows), ``ms``."""

    graph: CSRGraph
    topics: list[int]
    stats: dict = field(default_factory=dict)


def _chunks(items: Sequence[str], size: int) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


def _one_line(exc: BaseException, limit: int = 400) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[:limit] + "…"


def _literal_key(term: Term) -> str:
    """A literal node's key, as :mod:`kgrag.data.triples` keys it: ``"v"@lang``, ``"v"`` (plain / xsd:string),
    ``"v"^^<datatype>``."""
    if term.lang:
        return f'"{term.value}"@{term.lang}'
    if not term.datatype or term.datatype in _PLAIN_TYPES:
        return f'"{term.value}"'
    return f'"{term.value}"^^<{term.datatype}>'


def _local_ids(keys: list[str], namespace: str) -> list[str]:
    """A namespace IRI's own id (``m.0abc``), else :func:`iri_local_id`; another key whose id is taken gets
    :func:`slug_id` of the whole key (a namespace entity keeps its id, so the id still names it on the store)."""
    ids, own = [], []
    for key in keys:
        rest = key[len(namespace):] if key.startswith(namespace) else ""
        own.append(bool(ENTITY_ID_RE.match(rest)))
        ids.append(rest if own[-1] else iri_local_id(key))
    clashes = {i for i, n in Counter(ids).items() if n > 1}
    if clashes:
        ids = [slug_id(k) if i in clashes and not mine else i for k, i, mine in zip(keys, ids, own, strict=True)]
    if len(set(ids)) != len(ids):
        raise ValueError("two neighbourhood nodes map to the same local id")
    return ids


class _Expander:
    """One expansion's state: nodes seen, triples, names, counters."""

    def __init__(self, store: GraphStore, namespace: str, limits: ExpansionLimits, lang: str) -> None:
        self.store, self.ns, self.limits, self.lang = store, namespace, limits, lang
        ns_literal = literal(namespace)
        name_p, value_p = iri(namespace + NAME_PREDICATE), iri(namespace + VALUE_PREDICATE)
        self.name_p = name_p
        lang_literal = literal(lang)
        self.out_filter = (f"FILTER(STRSTARTS(STR(?p), {ns_literal}) && ?p != {name_p} && ?p != {value_p} && "
                           f"(isIRI(?x) || (isLiteral(?x) && (LANG(?x) = \"\" || "
                           f"LANGMATCHES(LANG(?x), {lang_literal})))))")
        self.in_filter = f"FILTER(STRSTARTS(STR(?p), {ns_literal}) && isIRI(?x))"
        self.seen: set[str] = set()
        self.literal_names: dict[str, str] = {}  # literal node key -> its value (the name)
        self.names: dict[str, str] = {}  # IRI -> name ("" when it has none), once fetched
        self.triples: set[tuple[str, str, str]] = set()
        self.queries = 0
        self.skipped_relations = 0
        self.step = ""

    # ------------------------------------------------------------------ queries
    def _select(self, query: str) -> list[Row]:
        self.queries += 1
        try:
            return self.store.select(query, timeout=self.limits.timeout_s)
        except Exception as exc:  # a store's own error, or a body its client could not read (not JSON)
            detail = _one_line(exc) if isinstance(exc, SparqlError) else f"{type(exc).__name__}: {_one_line(exc)}"
            raise SparqlError(f"neighbourhood expansion failed at {self.step} on {self.store.location}: "
                              f"{detail}") from exc

    def _edge(self, row: Row, out: bool) -> tuple[str, str] | None:
        """(relation local name, other end's key) of a result row, or None for a row to skip."""
        p, x = row.get("p"), row.get("x")
        if p is None or x is None or p.kind != "uri" or not p.value.startswith(self.ns):
            return None
        relation = p.value[len(self.ns):]
        if p.value in ALIAS_PREDICATES or p.value.endswith(_OWN_ALIAS):  # other names, as the import reads them
            return None
        if not RELATION_RE.match(relation):
            self.skipped_relations += 1
            return None
        if x.kind == "uri":
            return relation, x.value
        if x.kind == "literal" and out:
            key = _literal_key(x)
            self.literal_names.setdefault(key, x.value)
            return relation, key
        return None

    def _fetch(self, batch: Sequence[str], stats: dict) -> dict[tuple[str, bool], list[tuple[str, str]]]:
        """Every frontier node's edges per direction ``(node, out)``: all of them, or ``per_node + 1`` of a node
        with more (see the module docstring)."""
        per_node = self.limits.per_node
        terms = {node: iri(node) for node in batch}
        limit = min(2 * per_node * len(batch), ROW_CAP) + 1
        values = " ".join(terms[n] for n in batch)
        query = (f"SELECT ?n ?d ?p ?x WHERE {{ VALUES ?n {{ {values} }} "
                 f"{{ ?n ?p ?x . BIND(0 AS ?d) {self.out_filter} }} UNION "
                 f"{{ ?x ?p ?n . BIND(1 AS ?d) {self.in_filter} }} }} LIMIT {limit}")
        rows = self._select(query)
        stats["rows"] += len(rows)
        edges: dict[tuple[str, bool], list[tuple[str, str]]] = {(n, out): [] for n in batch for out in (True, False)}
        if len(rows) < limit:
            for row in rows:
                node, d = row.get("n"), row.get("d")
                if node is None or d is None or (node.value, d.value == "0") not in edges:
                    continue
                out = d.value == "0"
                edge = self._edge(row, out)
                if edge is not None:
                    edges[(node.value, out)].append(edge)
            return edges
        # a hub in the batch: the cap on the server, one sub-SELECT per node and direction
        stats["fallbacks"] += 1
        branch_limit = per_node + 1
        per_query = max(1, min(len(batch), ROW_CAP // (2 * branch_limit)))
        for chunk in _chunks(batch, per_query):
            branches, slots = [], []
            for node in chunk:
                for out in (True, False):
                    pattern = f"{terms[node]} ?p ?x . {self.out_filter}" if out else f"?x ?p {terms[node]} . {self.in_filter}"
                    branches.append(f"{{ SELECT ({len(slots)} AS ?i) ?p ?x WHERE {{ {pattern} }} LIMIT {branch_limit} }}")
                    slots.append((node, out))
            rows = self._select("SELECT ?i ?p ?x WHERE { " + " UNION ".join(branches) + " }")
            stats["rows"] += len(rows)
            for row in rows:
                slot = row.get("i")
                if slot is None or not slot.value.isdigit() or int(slot.value) >= len(slots):
                    continue
                node, out = slots[int(slot.value)]
                edge = self._edge(row, out)
                if edge is not None:
                    edges[(node, out)].append(edge)
        return edges

    # ------------------------------------------------------------------ hops
    def hop(self, frontier: list[str], kind: str) -> tuple[list[str], dict]:
        """Expand ``frontier`` (sorted IRIs); returns the nodes first reached here (sorted) and the hop's stats."""
        started = time.perf_counter()
        limits = self.limits
        queries_before = self.queries
        stats = {"kind": kind, "frontier": len(frontier), "queried": 0, "rows": 0, "triples": 0, "capped_nodes": 0,
                 "budget_hit": False, "truncated": False, "fallbacks": 0, "queries": 0, "ms": 0.0}
        queryable = []
        for node in frontier:  # literals are leaves; an IRI the server sent that SPARQL cannot quote is one too
            if node in self.literal_names:
                continue
            try:
                iri(node)
            except ValueError:
                continue
            queryable.append(node)
        remaining = limits.per_hop
        new: list[str] = []
        for batch in _chunks(queryable, limits.batch):
            if stats["budget_hit"] or remaining <= 0:  # the budget is spent: the rest stays unexpanded
                stats["budget_hit"] = True
                break
            edges = self._fetch(batch, stats)
            stats["queried"] += len(batch)
            for node in batch:
                if stats["budget_hit"]:
                    break
                capped = False
                for out in (True, False):
                    found = sorted(set(edges[(node, out)]))
                    if len(found) > limits.per_node:
                        capped = True
                        found = found[:limits.per_node]
                    for relation, other in found:
                        triple = (node, relation, other) if out else (other, relation, node)
                        if triple in self.triples:
                            continue
                        if remaining <= 0:
                            stats["budget_hit"] = True
                            break
                        self.triples.add(triple)
                        remaining -= 1
                        stats["triples"] += 1
                        if other not in self.seen:
                            self.seen.add(other)
                            new.append(other)
                stats["capped_nodes"] += capped
        stats["unexpanded"] = len(queryable) - stats["queried"]
        stats["truncated"] = bool(stats["budget_hit"] or stats["capped_nodes"])
        stats["queries"] = self.queries - queries_before
        stats["ms"] = round((time.perf_counter() - started) * 1000, 1)
        return sorted(new), stats

    # ------------------------------------------------------------------ names
    def fetch_names(self, nodes: Sequence[str], stats: dict) -> None:
        """Names of the IRIs among ``nodes`` not named yet (see the module docstring)."""
        started = time.perf_counter()
        todo = []
        for node in nodes:
            if node in self.names or node in self.literal_names:
                continue
            try:
                iri(node)
                todo.append(node)
            except ValueError:
                self.names[node] = ""
        lang = self.lang.lower()
        queries_before = self.queries
        for any_language in (False, True):
            missing = []
            for chunk in _chunks(todo, self.limits.batch):
                values = " ".join(iri(n) for n in chunk)
                condition = "isLiteral(?v)" if any_language else \
                    f"isLiteral(?v) && (LANG(?v) = \"\" || LANGMATCHES(LANG(?v), {literal(self.lang)}))"
                rows = self._select(f"SELECT ?e ?v WHERE {{ VALUES ?e {{ {values} }} ?e {self.name_p} ?v . "
                                    f"FILTER({condition}) }}")
                best: dict[str, tuple] = {}
                for row in rows:
                    e, v = row.get("e"), row.get("v")
                    if e is None or v is None:
                        continue
                    tag = (v.lang or "").lower()
                    if any_language:
                        rank = (tag, v.value)
                    else:
                        rank = (0 if tag == lang or tag.startswith(lang + "-") else 1, v.value)
                    if e.value not in best or rank < best[e.value]:
                        best[e.value] = rank
                for node in chunk:
                    if node in best:
                        self.names[node] = best[node][-1]
                    else:
                        missing.append(node)
            todo = missing
        for node in todo:
            self.names[node] = ""
        stats["queries"] += self.queries - queries_before
        stats["ms"] = round(stats["ms"] + (time.perf_counter() - started) * 1000, 1)

    def name_of(self, key: str) -> str:
        return self.literal_names.get(key, self.names.get(key, ""))


def _resolve(topic: str, namespace: str) -> str:
    topic = topic.strip()
    if ENTITY_ID_RE.match(topic):
        return namespace + topic
    if "://" in topic or topic.startswith("urn:"):
        iri(topic)  # raises ValueError on characters that would break the query
        return topic
    raise ValueError(f"topic {topic!r} is neither an entity IRI nor a local id (m.0abc, g.11x, e.x_1a2b3c4d)")


def expand_neighbourhood(store: GraphStore, topics: Sequence[str], namespace: str,
                         limits: ExpansionLimits | None = None, name: str = "neighbourhood", *,
                         lang: str = "en") -> Neighbourhood:
    """The bounded k-hop neighbourhood of ``topics`` (IRIs or local ids under ``namespace``) on ``store``, as a
    :class:`Neighbourhood` (see the module docstring). Raises :class:`SparqlError` when a query fails or times out,
    ValueError on a malformed topic, namespace or language tag."""
    started = time.perf_counter()
    limits = limits or ExpansionLimits()
    iri(namespace)
    if not _LANG_RE.match(lang):
        raise ValueError(f"invalid language tag {lang!r}")
    roots = list(dict.fromkeys(_resolve(t, namespace) for t in topics))
    x = _Expander(store, namespace, limits, lang)
    x.seen.update(roots)
    hops: list[dict] = []
    names_stats = {"nodes": 0, "named": 0, "queries": 0, "ms": 0.0}
    frontier = sorted(roots)
    for hop in range(1, limits.hops + 1):
        x.step = f"hop {hop} of {limits.hops}"
        frontier, stats = x.hop(frontier, "hop")
        hops.append({"hop": hop, **stats})
    for cvt_hop in range(1, limits.cvt_hops + 1):
        x.step = "names"
        x.fetch_names(frontier, names_stats)
        frontier = [n for n in frontier if n not in x.literal_names and not x.names.get(n)]
        if not frontier:
            break
        x.step = f"CVT hop {cvt_hop} of {limits.cvt_hops}"
        frontier, stats = x.hop(frontier, "cvt")
        hops.append({"hop": limits.hops + cvt_hop, **stats})
    keys = sorted(x.seen)
    x.step = "names"
    x.fetch_names(keys, names_stats)
    relations = sorted({r for _, r, _ in x.triples})
    e_index = {k: i for i, k in enumerate(keys)}
    r_index = {r: i for i, r in enumerate(relations)}
    ordered = sorted(x.triples)
    h = np.fromiter((e_index[s] for s, _, _ in ordered), dtype=np.int32, count=len(ordered))
    r = np.fromiter((r_index[p] for _, p, _ in ordered), dtype=np.int32, count=len(ordered))
    t = np.fromiter((e_index[o] for _, _, o in ordered), dtype=np.int32, count=len(ordered))
    names = [x.name_of(k) for k in keys]
    names_stats["nodes"] = len(keys)
    names_stats["named"] = sum(1 for n in names if n)
    graph = CSRGraph.from_arrays(name, namespace, keys, _local_ids(keys, namespace), names, relations, h, r, t,
                                 meta={"id_style": "iri", "name_lang": lang, "source": store.location,
                                       "limits": limits.model_dump()})
    stats = {"hops": hops, "names": names_stats, "nodes": len(keys), "triples": graph.num_triples,
             "queries": x.queries, "truncated": any(s["truncated"] for s in hops),
             "skipped_relations": x.skipped_relations, "ms": round((time.perf_counter() - started) * 1000, 1)}
    return Neighbourhood(graph=graph, topics=[e_index[k] for k in roots], stats=stats)

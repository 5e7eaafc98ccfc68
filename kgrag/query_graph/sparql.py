"""Run a :class:`~kgrag.query_graph.plan.QueryGraph` on a triple KG as SPARQL, through its
:class:`~kgrag.tools.client.KGClient` (the embedded store or an endpoint, same code).

    QueryExecutor(client).run(query_graph)  # SparqlExecution(answers=[Node("3", "3", True)], count=3, sparql="SELECT …")

Contract:

- The core path ``topic -r1-> ?m1 -r2-> ?x`` (each hop either direction; middles named or not), the entity
  constraint's path from the second topic to the same ``?x`` (an intersection), the literal constraint as a FILTER,
  ``count`` as ``COUNT(DISTINCT ?x)`` (the answer is the number, ``["3"]``; the counted items are the evidence) and
  ``argmax`` / ``argmin`` as a ``MAX`` / ``MIN`` sub-select (ties kept; ``limit`` > 1: ``ORDER BY … LIMIT``), over a
  literal relation or, with ``counts``, over the number of a relation's values. A plan without a topic ranges over
  the nodes typed (:data:`TYPE_RELATIONS`) with its answer type ("which scientists were born before 1880").
  Every id and relation reaches the text through :mod:`kgrag.graph.sparql`'s validated terms; numbers are formatted from floats.
- Values: a node's value is the node itself when it is an RDF literal, else its ``kgrag.value`` typed literal (how
  kgrag stores an imported literal, :mod:`kgrag.graph.rdf`). Years compare as the integer of the value's first four
  digits (``xsd:gYear``, ``xsd:date``, ``xsd:dateTime`` and ISO strings alike), dates in ISO order, numbers as
  ``xsd:decimal``. A constraint or a superlative whose relation holds no comparable value on the candidates is
  **not applied and said** (``not_applied``), never dropped in silence.
- The result: answers (:class:`~kgrag.tools.client.Node`: id, name, literal or not), the evidence (per answer,
  the first five: the path's triples with names and ids and each hop's direction, and whether the store holds each
  triple: one batched check), the SPARQL text run, and how many answers' paths were checked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kgrag.graph.iri import ENTITY_ID_RE, NAME_PREDICATE, RELATION_RE, VALUE_PREDICATE, XSD
from kgrag.graph.sparql import entity_term, iri, literal, relation_term
from kgrag.query_graph.plan import Aggregation, Hop, LiteralConstraint, QueryGraph
from kgrag.tools.client import Node

if TYPE_CHECKING:  # pragma: no cover
    from kgrag.graph.store import Row, Term
    from kgrag.tools.client import KGClient

__all__ = ["TYPE_RELATIONS", "QueryExecutor", "SparqlExecution", "comparable_filter", "node_term", "value_key"]

#: type edges of a node's classes: RDF's, Freebase's, Wikidata's (where a graph has them); a plan without a topic
#: ranges over the nodes typed with its answer type by any of them
TYPE_RELATIONS = ("type", "type.object.type", "common.topic.notable_types", "P31", "instance_of", "instanceOf")

#: the most rows one plan's query returns (answers × their paths)
ROW_LIMIT = 2000
#: answers whose paths are shown (and checked on the store)
EVIDENCE_ANSWERS = 5


def _term_text(term: Term) -> str:
    if term.kind == "literal":
        return literal(term.value, lang=term.lang, datatype=None if term.lang else term.datatype)
    return iri(term.value)


def held_triples(client: KGClient, triples: Sequence[tuple[Term, str, Term]]) -> list[bool]:
    """Whether the client's store holds each ``(term, relation local name, term)`` triple (one query)."""
    if not triples:
        return []
    base = client.base
    values = " ".join(f"({_term_text(h)} {relation_term(base, r)} {_term_text(t)})" for h, r, t in triples)
    rows = client.store.select(f"SELECT ?s ?p ?o WHERE {{ VALUES (?s ?p ?o) {{ {values} }} ?s ?p ?o }}",
                               timeout=client.timeout)
    found = {(r["s"].value, r["p"].value, r["o"].value) for r in rows}
    return [(h.value, base + r, t.value) in found for h, r, t in triples]


def node_term(base: str, node_id: str) -> str:
    """A node's SPARQL term: a local entity id under ``base``, else a full IRI (both validated)."""
    if ENTITY_ID_RE.match(node_id):
        return entity_term(base, node_id)
    if "://" in node_id or node_id.startswith("urn:"):
        return iri(node_id)
    raise ValueError(f"invalid node id {node_id!r}")


def _number(value: float) -> str:
    """A float as a SPARQL decimal literal (never exponent notation)."""
    text = f"{float(value):.6f}".rstrip("0").rstrip(".")
    return text if text not in ("", "-") else "0"


def value_key(var: str, kind: str) -> str:
    """The comparable form of ``?var``'s value: the year (an integer) for ``year``, the ISO text for ``date``,
    an ``xsd:decimal`` for ``number``."""
    if kind == "year":
        return f"<{XSD}integer>(SUBSTR(STR(?{var}), 1, 4))"
    if kind == "date":
        return f"STR(?{var})"
    return f"<{XSD}decimal>(STR(?{var}))"


def comparable_filter(var: str, kind: str) -> str:
    """``?var`` holds a value of ``kind`` (a year / an ISO date leads with four digits; a number is decimal)."""
    if kind in ("year", "date"):
        return f'REGEX(STR(?{var}), "^[0-9]{{4}}")'
    return f'REGEX(STR(?{var}), "^[+-]?[0-9]+([.][0-9]*)?$")'


@dataclass
class SparqlExecution:
    """What one plan returned (see the module docstring)."""

    answers: list[Node]
    #: the counted (``count``) or ranked items; the answers otherwise
    items: list[Node]
    sparql: str
    count: int | None = None
    evidence: list[dict[str, Any]] = field(default_factory=list)
    #: the plan's parts that could not be applied, each as one sentence ("before 1900: birth date holds no year")
    not_applied: list[str] = field(default_factory=list)
    #: answers whose path was checked on the store, of all answers (items for a count)
    checked: int = 0

    @property
    def held(self) -> list[bool]:
        return [h for e in self.evidence for h in e["held"]]


class QueryExecutor:
    """Compile and run query graphs on one KG (see the module docstring)."""

    def __init__(self, client: KGClient, row_limit: int = ROW_LIMIT) -> None:
        self.client = client
        self.base = client.base
        self.row_limit = row_limit
        self._name = relation_term(client.base, NAME_PREDICATE)
        self._value = relation_term(client.base, VALUE_PREDICATE)
        self._types = " ".join(relation_term(client.base, r) for r in TYPE_RELATIONS if RELATION_RE.match(r))

    # ------------------------------------------------------------------ building
    def _select(self, query: str) -> list[Row]:
        return self.client.store.select(query, timeout=self.client.timeout)

    def _edge(self, a: str, hop: Hop | LiteralConstraint | Aggregation, b: str) -> str:
        rel = relation_term(self.base, hop.relation)
        return f"{a} {rel} {b} ." if hop.direction == "out" else f"{b} {rel} {a} ."

    def _path(self, start: str, hops: list[Hop], end: str, prefix: str) -> str:
        nodes = [start, *(f"?{prefix}{i}" for i in range(1, len(hops))), end]
        return " ".join(self._edge(nodes[i], h, nodes[i + 1]) for i, h in enumerate(hops))

    def _value_of(self, node: str, var: str) -> str:
        """Bind ``?var`` to the value of ``?node`` (itself when a literal, else its ``kgrag.value``)."""
        return (f"OPTIONAL {{ ?{node} {self._value} ?{node}_v }} "
                f"BIND(IF(isLiteral(?{node}), ?{node}, ?{node}_v) AS ?{var})")

    def core(self, qg: QueryGraph, literal_constraint: bool = True) -> str:
        """The WHERE body: the core path to ``?x`` (without a topic: the nodes typed with the answer type), the
        entity constraint and the literal constraint."""
        if qg.topics:
            topic = node_term(self.base, qg.topics[0].id)
            parts = [self._path(topic, qg.path, "?x", "m"), f"FILTER(!sameTerm(?x, {topic}))"]
        elif qg.start_type or not self._types:
            raise ValueError("a plan from start_type, or over a type on a graph without type edges, cannot run on a "
                             "triple KG")
        else:
            parts = [f"VALUES ?tr {{ {self._types} }} ?x ?tr {node_term(self.base, qg.answer_type)} ."]
        parts += [f"FILTER(isLiteral(?x) || EXISTS {{ ?x {self._name} ?x_name }} || EXISTS {{ ?x {self._value} ?x_val }})"]
        if qg.entity_constraint is not None:
            other = node_term(self.base, qg.entity_constraint.topic.id)
            parts += [self._path(other, qg.entity_constraint.path, "?x", "c"), f"FILTER(!sameTerm(?x, {other}))"]
        lc = qg.literal_constraint
        if lc is not None and literal_constraint:
            parts.append(self._literal_filter(qg, lc))
        return " ".join(parts)

    def _anchor(self, qg: QueryGraph, lc: LiteralConstraint) -> str:
        if lc.on == "middle" and len(qg.path) >= 2:
            return f"?m{len(qg.path) - 1}"
        return "?x"

    def _literal_filter(self, qg: QueryGraph, lc: LiteralConstraint) -> str:
        kind = "number" if lc.kind == "number" else "year"  # a date bound is a year (the cues read years)
        key = value_key("lcv", kind)
        if lc.op == "between":
            high = lc.value2 if lc.value2 is not None else lc.value
            test = f"{key} >= {_number(lc.value)} && {key} <= {_number(high)}"
        else:
            test = f"{key} {lc.op} {_number(lc.value)}"
        return (f"{self._edge(self._anchor(qg, lc), lc, '?lc')} {self._value_of('lc', 'lcv')} "
                f"FILTER({comparable_filter('lcv', kind)}) FILTER({test})")

    def _has_values(self, qg: QueryGraph, lc: LiteralConstraint | Aggregation, kind: str) -> bool:
        """Whether the constraint's relation holds any comparable value on the plan's candidates."""
        anchor = self._anchor(qg, lc) if isinstance(lc, LiteralConstraint) else "?x"
        body = (f"{self.core(qg, literal_constraint=False)} {self._edge(anchor, lc, '?lc')} "
                f"{self._value_of('lc', 'lcv')} FILTER({comparable_filter('lcv', kind)})")
        return self.client.store.ask(f"ASK {{ {body} }}", timeout=self.client.timeout)

    def _path_vars(self, qg: QueryGraph) -> str:
        names = [f"?m{i}" for i in range(1, len(qg.path))]
        if qg.entity_constraint is not None:
            names += [f"?c{i}" for i in range(1, len(qg.entity_constraint.path))]
        return " ".join(names)

    def _keyed(self, ag: Aggregation, body: str, k: str) -> str:
        """A sub-select of ``?x`` with its aggregation key bound to ``?{k}``."""
        if ag.counts:
            return (f"{{ SELECT ?x (COUNT(DISTINCT ?ag) AS ?{k}) WHERE {{ {body} {self._edge('?x', ag, '?ag')} }} "
                    "GROUP BY ?x }")
        kind = ag.kind or "number"
        return (f"{{ SELECT ?x ?{k} WHERE {{ {body} {self._edge('?x', ag, '?ag')} {self._value_of('ag', 'agv')} "
                f"FILTER({comparable_filter('agv', kind)}) BIND({value_key('agv', kind)} AS ?{k}) }} }}")

    def _ranked(self, ag: Aggregation, body: str) -> str:
        """``body`` narrowed to the answers with the best key (``?k``): ties kept, or the ``limit`` best."""
        if ag.limit > 1:
            order = "DESC(?k)" if ag.op == "argmax" else "ASC(?k)"
            return (f"{{ SELECT DISTINCT ?x ?k WHERE {{ {self._keyed(ag, body, 'k')} }} ORDER BY {order} "
                    f"LIMIT {int(ag.limit)} }} {body}")
        best = "MAX" if ag.op == "argmax" else "MIN"
        return (f"{self._keyed(ag, body, 'k')} {{ SELECT ({best}(?k2) AS ?best) WHERE {{ "
                f"{self._keyed(ag, body, 'k2')} }} }} FILTER(?k = ?best) {body}")

    def compile(self, qg: QueryGraph, apply_literal: bool = True, apply_aggregation: bool = True) -> str:
        """The SELECT of the plan's answers with their paths (and ``?k``, the aggregation key)."""
        body = self.core(qg, literal_constraint=apply_literal)
        ag = qg.aggregation
        key = ""
        if ag is not None and ag.op != "count" and apply_aggregation:
            body = self._ranked(ag, body)
            key = " ?k"
        return f"SELECT DISTINCT ?x{key} {self._path_vars(qg)} WHERE {{ {body} }} LIMIT {self.row_limit}"

    def compile_count(self, qg: QueryGraph, apply_literal: bool = True) -> str:
        return (f"SELECT (COUNT(DISTINCT ?x) AS ?n) WHERE {{ {self.core(qg, literal_constraint=apply_literal)} }}")

    # ------------------------------------------------------------------ running
    def run(self, qg: QueryGraph) -> SparqlExecution:
        """Run the plan (see the module docstring); ValueError for an id or relation that cannot name a term."""
        not_applied: list[str] = []
        apply_literal = apply_aggregation = True
        lc, ag = qg.literal_constraint, qg.aggregation
        text = self.compile(qg)
        rows = self._select(text)
        if not rows and lc is not None and not self._has_values(qg, lc, "number" if lc.kind == "number" else "year"):
            apply_literal = False
            not_applied.append(f"{lc.text or lc.op}: {lc.label or lc.relation} holds no comparable "
                               f"{'year' if lc.kind in ('year', 'date') else 'number'} here")
        if not rows and ag is not None and ag.op != "count" and not ag.counts and apply_literal and \
                not self._has_values(qg, ag, ag.kind or "number"):
            apply_aggregation = False
            not_applied.append(f"{ag.text or ag.op}: {ag.label or ag.relation} holds no comparable value here")
        if not apply_literal or not apply_aggregation:
            text = self.compile(qg, apply_literal, apply_aggregation)
            rows = self._select(text)
        count = None
        if ag is not None and ag.op == "count":
            text = self.compile_count(qg, apply_literal)
            counted = self._select(text)
            count = int(counted[0]["n"].value) if counted and "n" in counted[0] else 0
        return self._result(qg, rows, text, count, not_applied)

    def _local(self, term: Term) -> str:
        value = term.value
        return value[len(self.base):] if term.kind == "uri" and value.startswith(self.base) else value

    def _names(self, terms: list[Term]) -> dict[str, str]:
        """Names of the IRIs (one query): the client's language first, else any name."""
        uris = list(dict.fromkeys(t.value for t in terms if t.kind == "uri"))
        if not uris:
            return {}
        values = " ".join(iri(u) for u in uris)
        rows = self._select(f"SELECT ?e ?n WHERE {{ VALUES ?e {{ {values} }} ?e {self._name} ?n }}")
        names: dict[str, str] = {}
        lang = self.client.lang
        for row in rows:
            key, name = row["e"].value, row["n"]
            preferred = (name.lang or "").lower().startswith(lang)
            if key not in names or preferred:
                names[key] = name.value
        return names

    def _result(self, qg: QueryGraph, rows: list[Row], text: str, count: int | None,
                not_applied: list[str]) -> SparqlExecution:
        paths: dict[str, list[tuple[Term, Hop, Term]]] = {}
        terms: dict[str, Term] = {}
        keys: dict[str, float] = {}
        topic = None
        if qg.topics:
            topic = _uri(self.base + qg.topics[0].id) if ENTITY_ID_RE.match(qg.topics[0].id) else \
                _uri(qg.topics[0].id)
        for row in rows:
            x = row["x"]
            key = x.value if x.kind == "literal" else self._local(x)
            if key in paths:
                continue
            terms[key] = x
            if "k" in row:
                try:
                    keys[key] = float(row["k"].value)
                except ValueError:
                    keys[key] = 0.0
            if topic is None:  # a plan over a type: no path to show
                paths[key] = []
                continue
            nodes = [topic, *(row[f"m{i}"] for i in range(1, len(qg.path)) if f"m{i}" in row), x]
            if len(nodes) != len(qg.path) + 1:
                nodes = [topic, x]
            paths[key] = [(nodes[i], h, nodes[i + 1]) for i, h in enumerate(qg.path[: len(nodes) - 1])]
        shown_terms = [t for k in list(paths)[:EVIDENCE_ANSWERS] for step in paths[k] for t in (step[0], step[2])]
        names = self._names([*terms.values(), *shown_terms])
        if topic is not None:
            names.setdefault(topic.value, qg.topics[0].name)
        items = [Node(k, t.value if t.kind == "literal" else names.get(t.value, ""), t.kind == "literal")
                 for k, t in terms.items()]
        reverse = qg.aggregation is not None and qg.aggregation.op == "argmax"
        if keys:
            items.sort(key=lambda a: (-keys.get(a.id, 0.0) if reverse else keys.get(a.id, 0.0), a.label, a.id))
        else:
            items.sort(key=lambda a: (a.label.lower(), a.id))
        evidence = self._evidence(items[:EVIDENCE_ANSWERS], paths, names)
        answers = items if count is None else [Node(str(count), str(count), True)]
        return SparqlExecution(answers, items, text, count, evidence, not_applied,
                         checked=sum(1 for e in evidence if e["held"] and all(e["held"])))

    def _evidence(self, shown: list[Node], paths: dict[str, list[tuple[Term, Hop, Term]]],
                  names: dict[str, str]) -> list[dict[str, Any]]:
        triples = list(dict.fromkeys((h, hop.relation, t) if hop.direction == "out" else (t, hop.relation, h)
                                     for a in shown for h, hop, t in paths.get(a.id, [])))
        held = dict(zip(triples, self.held(triples), strict=True))

        def show(term: Term) -> str:
            return term.value if term.kind == "literal" else names.get(term.value) or "(unnamed)"

        def local(term: Term) -> str:
            return term.value if term.kind == "literal" else self._local(term)

        out = []
        for a in shown:
            steps = paths.get(a.id, [])
            stored = [(h, hop.relation, t) if hop.direction == "out" else (t, hop.relation, h) for h, hop, t in steps]
            out.append({
                "answer": a.label, "entity_id": a.id,
                "triples": [[show(h), r, show(t)] for h, r, t in stored],
                "id_triples": [[local(h), r, local(t)] for h, r, t in stored],
                # the path as read from the topic: each hop's direction ("in": the stored triple points back)
                "hops": [{"from": show(h), "relation": hop.relation, "label": hop.label or hop.relation,
                          "direction": hop.direction, "to": show(t)} for h, hop, t in steps],
                "held": [held[tr] for tr in stored],
            })
        return out

    def held(self, triples: list[tuple[Term, str, Term]]) -> list[bool]:
        """Whether the store holds each triple (one query)."""
        return held_triples(self.client, triples)


def _uri(value: str) -> Term:
    from kgrag.graph.store import Term

    return Term("uri", value)

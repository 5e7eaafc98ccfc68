"""Stateless SPARQL access for the KG tools (spec kg-tools.md, the specification of the KG tools for LLM
agents, §2.3, §3.5).

:class:`KGClient` builds every query from validated identifiers (:mod:`kgrag.graph.sparql`) and escaped
literals, runs it on any :class:`~kgrag.graph.store.GraphStore` (embedded or remote, same code) and turns IRIs
into dotted local names. It keeps no state between calls: caches, registries and CVT mappings belong to the
per-question :class:`~kgrag.tools.session.KGSession`.
"""

from __future__ import annotations

from dataclasses import dataclass

from kgrag.data.freebase import FREEBASE_NS
from kgrag.graph.iri import ENTITY_ID_RE, NAME_PREDICATE
from kgrag.graph.sparql import entity_term, literal, relation_term
from kgrag.graph.store import GraphStore, Row, Term

#: entity ids an agent may pass directly (spec §2.1: ``m.``/``g.``/``en.``; plus kgrag's ``e.`` slug ids)
ID_PREFIXES = ("m.", "g.", "en.", "e.")


def looks_like_id(value: str) -> bool:
    return value.startswith(ID_PREFIXES)


@dataclass(frozen=True)
class Node:
    """A result node: ``id`` is a local entity id (or a full foreign IRI, or a literal's value)."""

    id: str
    name: str  # English name, else any name, else ""
    is_literal: bool = False

    @property
    def label(self) -> str:
        return self.name or self.id

    @property
    def is_cvt(self) -> bool:
        """An unnamed ``m.`` node (spec §3.5.4: the ID starts with ``m.`` and the name is empty or the ID), or an
        unnamed ``e.`` node (the ids kgrag mints for an imported graph's nodes: its mediator nodes). Freebase's
        ``g.`` nodes are never CVTs (the spec's rule), nor is a foreign IRI."""
        return (not self.is_literal and self.id.startswith(("m.", "e."))
                and (not self.name or self.name == self.id))


class KGClient:
    """SPARQL for the KG tools over one namespace ``base`` (Freebase's by default)."""

    def __init__(self, store: GraphStore, base: str = FREEBASE_NS, timeout: float = 120.0, lang: str = "en",
                 case_insensitive_names: bool = True) -> None:
        self.store = store
        self.base = base
        self.timeout = timeout
        self.lang = lang
        self.case_insensitive_names = case_insensitive_names
        self._name = relation_term(base, NAME_PREDICATE)
        self._base_literal = literal(base)

    # ------------------------------------------------------------------ helpers
    def _select(self, query: str) -> list[Row]:
        return self.store.select(query, timeout=self.timeout)

    def _local(self, term: Term) -> str:
        value = term.value
        return value[len(self.base):] if term.kind == "uri" and value.startswith(self.base) else value

    def _node(self, row: Row, var: str) -> Node:
        term = row[var]
        name_term = row.get("preferred_name") or row.get("fallback_name")
        name = name_term.value if name_term is not None else ""
        if term.kind == "literal":
            return Node(id=term.value, name=term.value, is_literal=True)
        return Node(id=self._local(term), name=name)

    def _relation_names(self, rows: list[Row]) -> list[str]:
        out: list[str] = []
        for row in rows:
            rel = self._local(row["relation"]).replace("/", ".")
            if rel not in out:
                out.append(rel)
        return out

    # ------------------------------------------------------------------ entities
    def resolve_entity(self, name: str) -> str | None:
        """Entity id for a name: exact ``"name"@lang``, then an exact plain literal, then (optionally) a
        case-insensitive scan. Among several entities with the name, the one with most types wins (then id)."""
        lit_plain = literal(name)
        patterns = [f"?e {self._name} {literal(name, lang=self.lang)} .", f"?e {self._name} {lit_plain} ."]
        if self.case_insensitive_names:
            patterns.append(f"?e {self._name} ?n . FILTER(LCASE(STR(?n)) = LCASE({lit_plain}))")
        for pattern in patterns:
            rows = self._select(f"SELECT DISTINCT ?e WHERE {{ {pattern} FILTER(isIRI(?e)) }} LIMIT 10")
            ids = sorted({self._local(r["e"]) for r in rows if "e" in r} - {""})
            ids = [i for i in ids if ENTITY_ID_RE.match(i)]
            if len(ids) == 1:
                return ids[0]
            if ids:
                return self._most_typed(ids)
        return None

    def _most_typed(self, ids: list[str]) -> str:
        values = " ".join(entity_term(self.base, i) for i in ids)
        types = relation_term(self.base, "type.object.type")
        rows = self._select(f"SELECT ?e (COUNT(?t) AS ?n) WHERE {{ VALUES ?e {{ {values} }} OPTIONAL {{ ?e {types} ?t }} }} "
                            "GROUP BY ?e ORDER BY DESC(?n) ?e LIMIT 1")
        return self._local(rows[0]["e"]) if rows else ids[0]

    def entity_name(self, entity_id: str) -> str:
        """The entity's name in ``lang`` when it has one, else its first name, else ``""``."""
        rows = self._select(f"SELECT ?name WHERE {{ {entity_term(self.base, entity_id)} {self._name} ?name }} "
                            "ORDER BY ?name LIMIT 50")
        names = [r["name"] for r in rows if "name" in r]
        preferred = [t.value for t in names if (t.lang or "").lower().startswith(self.lang)]
        return preferred[0] if preferred else (names[0].value if names else "")

    # ------------------------------------------------------------------ relations
    def relations(self, entity_id: str, limit: int = 100) -> list[str]:
        """Relations on the entity's outgoing edges, then on its incoming edges (deduplicated, dotted)."""
        ent = entity_term(self.base, entity_id)
        out_rows = self._select(
            f"SELECT DISTINCT ?relation WHERE {{ {ent} ?relation ?tail . FILTER(isIRI(?relation)) "
            f"FILTER(STRSTARTS(STR(?relation), {self._base_literal})) }} LIMIT {int(limit)}"
        )
        in_rows = self._select(
            f"SELECT DISTINCT ?relation WHERE {{ ?head ?relation {ent} . FILTER(isIRI(?relation)) "
            f"FILTER(STRSTARTS(STR(?relation), {self._base_literal})) }} LIMIT {int(limit)}"
        )
        return self._relation_names(out_rows + in_rows)

    def node_relations(self, node_id: str, direction: str, limit: int = 50) -> list[str]:
        """Relations leaving (``out``) or entering (``in``) a node, e.g. a CVT (spec §3.5.5)."""
        node = entity_term(self.base, node_id)
        pattern = f"{node} ?relation ?x ." if direction == "out" else f"?x ?relation {node} ."
        rows = self._select(
            f"SELECT DISTINCT ?relation WHERE {{ {pattern} FILTER(isIRI(?relation)) "
            f"FILTER(STRSTARTS(STR(?relation), {self._base_literal})) }} ORDER BY ?relation LIMIT {int(limit)}"
        )
        return self._relation_names(rows)

    # ------------------------------------------------------------------ triples
    def has_triple(self, head_id: str, relation: str, tail_id: str) -> bool:
        """Whether the store holds ``head -relation-> tail`` (ids and relation validated; ValueError otherwise)."""
        head, tail = entity_term(self.base, head_id), entity_term(self.base, tail_id)
        return self.store.ask(f"ASK {{ {head} {relation_term(self.base, relation)} {tail} }}", timeout=self.timeout)

    def _named(self, var: str) -> str:
        return (
            f"OPTIONAL {{ ?{var} {self._name} ?name_en . FILTER(LANGMATCHES(LANG(?name_en), {literal(self.lang)})) }} "
            f"OPTIONAL {{ ?{var} {self._name} ?name_any . }}"
        )

    def neighbours(self, entity_id: str, relation: str, direction: str, limit: int) -> list[Node]:
        """Nodes linked to the entity by ``relation``: its tails (``out``) or heads (``in``), with names."""
        ent, rel = entity_term(self.base, entity_id), relation_term(self.base, relation)
        var = "tail" if direction == "out" else "head"
        pattern = f"{ent} {rel} ?tail ." if direction == "out" else f"?head {rel} {ent} ."
        return self._named_nodes(var, pattern, limit)

    def _named_nodes(self, var: str, pattern: str, limit: int) -> list[Node]:
        """Up to ``limit`` distinct ``?var`` matching ``pattern``, each with its preferred and fallback name.

        Same result as the spec's ``GROUP BY ?var LIMIT n`` query, but the limit is applied to the distinct
        nodes before names are joined, so a hub (a genre with 8,000 films) costs ``limit`` name lookups, not 8,000.
        """
        rows = self._select(
            f"SELECT ?{var} (SAMPLE(?name_en) AS ?preferred_name) (SAMPLE(?name_any) AS ?fallback_name) "
            f"WHERE {{ {{ SELECT DISTINCT ?{var} WHERE {{ {pattern} }} LIMIT {int(limit)} }} {self._named(var)} }} "
            f"GROUP BY ?{var}"
        )
        return [self._node(r, var) for r in rows if var in r]

    def flatten_neighbours(self, entity_id: str, original_rel: str, cvt_id: str, cvt_rel: str, direction: str,
                           limit: int) -> list[Node]:
        """The two-hop path through one CVT: ``entity -original-> cvt -cvt_rel-> ?x`` (``out``) or
        ``?x -cvt_rel-> cvt -original-> entity`` (``in``)."""
        ent, cvt = entity_term(self.base, entity_id), entity_term(self.base, cvt_id)
        orig, crel = relation_term(self.base, original_rel), relation_term(self.base, cvt_rel)
        if direction == "out":
            var, pattern = "final_tail", f"{ent} {orig} {cvt} . {cvt} {crel} ?final_tail ."
        else:
            var, pattern = "final_head", f"?final_head {crel} {cvt} . {cvt} {orig} {ent} ."
        return self._named_nodes(var, pattern, limit)

"""Small, safe SPARQL queries used across the project (identifiers validated, no pasted strings)."""

from __future__ import annotations

from kgrag.graph.iri import NAME_PREDICATE
from kgrag.graph.sparql import entity_term, relation_term
from kgrag.graph.store import GraphStore


def one_hop_query(base: str, entity_id: str, relation: str, direction: str = "out") -> str:
    """Names of the entities reached from ``entity_id`` over ``relation`` (``out``: entity is the head)."""
    ent, rel, name = entity_term(base, entity_id), relation_term(base, relation), relation_term(base, NAME_PREDICATE)
    pattern = f"{ent} {rel} ?x ." if direction == "out" else f"?x {rel} {ent} ."
    return f"SELECT DISTINCT ?x ?name WHERE {{ {pattern} OPTIONAL {{ ?x {name} ?name }} }} ORDER BY ?name"


def neighbourhood_query(base: str, entity_id: str) -> str:
    """All one-hop edges around ``entity_id`` in both directions (excluding literal-valued properties)."""
    ent = entity_term(base, entity_id)
    return (
        "SELECT ?s ?p ?o WHERE { "
        f"{{ BIND({ent} AS ?s) {ent} ?p ?o . FILTER(isIRI(?o)) }} UNION {{ BIND({ent} AS ?o) ?s ?p {ent} . }} }}"
    )


def one_hop_names(store: GraphStore, base: str, entity_id: str, relation: str, direction: str = "out") -> list[str]:
    rows = store.select(one_hop_query(base, entity_id, relation, direction))
    return [r["name"].value if "name" in r else r["x"].value.removeprefix(base) for r in rows]

"""The structured question sets of bench/questions/structured: written deterministically by code, their gold answers
hold on the graph files as written (SPARQL on a real pyoxigraph store for the Turtle graphs; the YAML/CSV network
read back by the project's loader), and the dev and held-out parts share no question."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import pyoxigraph
import pytest

from bench.questions.make_structured_questions import (
    OUT,
    SPECS,
    Template,
    build,
    dumps,
    questions_for,
    read_set,
)
from bench.user_graphs import GRAPHS, vocabulary, write_all, write_graph
from bench.worlds import world_from_network
from kgrag.graph.sparql import iri, literal
from kgrag.network.loaders.declarative import load_declarative

PER_KIND = 3  # questions checked per kind and graph
TURTLE_GRAPHS = ("scientists", "scientists_wd", "bands", "rivers", "rivers_wd")


@pytest.fixture(scope="module")
def sets() -> dict[str, list[dict]]:
    return build()


def test_generators_are_deterministic_and_the_committed_files_current(tmp_path, sets) -> None:
    assert build() == sets
    for name, rows in sets.items():
        assert (OUT / f"{name}.jsonl").read_text(encoding="utf-8") == dumps(rows), f"rerun the generator: {name}"
    first, second = write_all(tmp_path / "a"), write_all(tmp_path / "b")
    for name in GRAPHS:
        if first[name].suffix != ".yaml":
            assert first[name].read_bytes() == second[name].read_bytes(), name
    assert {r["kind"] for rows in sets.values() for r in rows if r["template"] >= 0} == {
        "one_hop", "reverse", "two_hop", "answer_type", "count", "year_filter", "superlative", "two_topics",
        "literal"}


def test_dev_and_holdout_share_no_question(sets) -> None:
    dev = {r["question"] for name, rows in sets.items() if name.endswith("_dev") for r in rows}
    held = {r["question"] for name, rows in sets.items() if name.endswith("_holdout") for r in rows}
    assert dev and held and not dev & held
    for graph in GRAPHS:  # a graph written as a new user would is wholly in one part
        assert (f"{graph}_dev" in sets) != (f"{graph}_holdout" in sets)
    assert len(read_set("demo_kg_suggested")) == 18


def _query(t: Template, row: dict, preds: dict[str, str], name_p: str, kinds: dict[str, str]) -> str:
    """SPARQL computing ``row``'s answer from the store, the template's walk spelled in the graph's predicates."""
    def walk(start_var: str, name: str, path: tuple[str, ...], end: str) -> str:
        lines = [f"?{start_var} {iri(name_p)} {literal(name, 'en')} ."]
        current = start_var
        for i, rel in enumerate(path):
            nxt = end if i == len(path) - 1 else f"{start_var}_{i}"
            if rel.startswith("^"):
                lines.append(f"?{nxt} {iri(preds[rel[1:]])} ?{current} .")
            else:
                lines.append(f"?{current} {iri(preds[rel])} ?{nxt} .")
            current = nxt
        return "\n".join(lines)

    topics = row["topics"]
    named = f"?x {iri(name_p)} ?name ."
    if t.kind in ("one_hop", "reverse", "two_hop", "answer_type"):
        return f"SELECT DISTINCT ?name WHERE {{ {walk('t', topics[0], t.path, 'x')} {named} }}"
    if t.kind == "count":
        return f"SELECT (COUNT(DISTINCT ?x) AS ?name) WHERE {{ {walk('t', topics[0], t.path, 'x')} {named} }}"
    if t.kind == "literal":
        return f"SELECT ?name WHERE {{ ?t {iri(name_p)} {literal(topics[0], 'en')} ; {iri(preds[t.attr])} ?name }}"
    if t.kind == "two_topics":
        return (f"SELECT DISTINCT ?name WHERE {{ {walk('t', topics[0], t.path, 'x')} "
                f"{walk('u', topics[1], t.second, 'x')} {named} }}")
    value = f"?x {iri(preds[t.attr])} ?v ."
    key = "?v" if kinds[t.attr] in ("integer", "decimal") else "STR(?v)"
    if t.kind == "year_filter":
        year = re.findall(r"\d{4}", row["question"])[-1]
        return (f"SELECT DISTINCT ?name WHERE {{ {walk('t', topics[0], t.path, 'x')} {value} {named} "
                f"FILTER(xsd:integer(SUBSTR(STR(?v), 1, 4)) {t.op} {int(year)}) }}")
    agg = "MIN" if t.op == "min" else "MAX"
    return (f"SELECT DISTINCT ?name WHERE {{ {{ SELECT ({agg}({key}) AS ?best) WHERE {{ "
            f"{walk('t', topics[0], t.path, 'x')} {value} }} }} {walk('t', topics[0], t.path, 'x')} {value} "
            f"{named} FILTER({key} = ?best) }}")


@pytest.mark.parametrize("graph", TURTLE_GRAPHS)
def test_gold_holds_on_the_written_turtle(tmp_path, sets, graph) -> None:
    store = pyoxigraph.Store()
    store.load(path=str(write_graph(graph, tmp_path)), format=pyoxigraph.RdfFormat.TURTLE)
    preds, name_p = vocabulary(graph)
    kinds = GRAPHS[graph].world().attr_types
    rows = sets[f"{graph}_{GRAPHS[graph].part}"]
    checked: dict[str, int] = defaultdict(int)
    for row in rows:
        t = SPECS[graph][row["template"]]
        if t.of_type is not None or checked[t.kind] >= PER_KIND:
            continue
        query = "PREFIX xsd: <http://www.w3.org/2001/XMLSchema#> " + _query(t, row, preds, name_p, kinds)
        found = sorted({s["name"].value for s in store.query(query)})
        assert found == sorted(row["answers"]), (row, query)
        checked[t.kind] += 1
    assert set(checked) == {"one_hop", "reverse", "two_hop", "answer_type", "count", "year_filter", "superlative",
                            "two_topics", "literal"}


def test_network_gold_holds_on_the_files_read_back(tmp_path, sets) -> None:
    schema = write_graph("courses", tmp_path)
    world = world_from_network("courses", *load_declarative(Path(schema)))
    assert questions_for("courses", world) == sets["courses_holdout"]
    assert len(world.nodes) == len(GRAPHS["courses"].world().nodes)

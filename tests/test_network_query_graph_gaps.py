"""The network query graphs' gaps (issue 44 §1, §4, network side), on examples/library with gold computed from its
CSV files by code: "the most X" — ``query_object_instance`` ordered by how many links of one relation type each
instance has (tool, HTTP route) and the LLM-free agent's argmax / argmin over those counts ("which author wrote
the most books", "who wrote the most books", "which genre has the most books"; ties kept); filters on the middle
node ("which genres have books published before 1900", "… George Orwell …, for books published after 1946");
and the planner's no-regression rules on a medical-shaped network (one name stored under two types is one topic,
a property intent with two topics, a cue no property can take, a bare 多少)."""

from __future__ import annotations

import csv
from collections import Counter
from typing import Any

import pytest
from fastapi.testclient import TestClient
from fixtures.library_kn import EXAMPLE, ask_library, load_library

from kgrag.agent.kn.instance_queries import ObjectInstanceQuery, ToolInputError, query_object_instance
from kgrag.config import Settings
from kgrag.network.store import NetworkStore

BASE = "/api/agent-retrieval/in/v1/kn"


def _names(file: str, key: str) -> dict[str, str]:
    with (EXAMPLE / file).open(encoding="utf-8") as fh:
        return {row["id"]: row[key] for row in csv.DictReader(fh)}


def _link_counts(relation: str, forward: bool) -> Counter:
    with (EXAMPLE / "links.csv").open(encoding="utf-8") as fh:
        return Counter(row["source_id" if forward else "target_id"] for row in csv.DictReader(fh)
                       if row["relation_type_id"] == relation)


def _best(relation: str, forward: bool, names: dict[str, str], most: bool = True) -> set[str]:
    counts = _link_counts(relation, forward)
    top = max(counts.values()) if most else min(counts.values())
    return {names[i] for i, n in counts.items() if n == top}


@pytest.fixture(scope="module")
def library_db(tmp_path_factory: pytest.TempPathFactory) -> str:
    return load_library(tmp_path_factory.mktemp("library-most"))[0]


ask = ask_library


def test_tool_orders_by_link_counts(library_db: str) -> None:
    store = NetworkStore(library_db)
    try:
        def ranked(object_type: str, **args: Any) -> list[tuple[str, int]]:
            out = query_object_instance(store, ObjectInstanceQuery(kn_id="library", object_type=object_type, **args))
            return [(i["id"], i["links"]) for i in out["instances"]]

        wrote = _link_counts("wrote", forward=True)
        most = ranked("Author", order_by_links={"relation_type": "wrote", "direction": "out"}, order="desc", limit=50)
        assert dict(most) == dict(wrote)  # every author with a book, each with its number of books
        assert [n for _, n in most] == sorted(wrote.values(), reverse=True)
        ties = [i for i, n in most if n == most[0][1]]
        assert ties == sorted(ties)  # ties by id
        fewest = ranked("Author", order_by_links={"relation_type": "wrote"}, order="asc", limit=1)
        assert fewest[0][1] == min(wrote.values())
        genres = ranked("Genre", order_by_links={"relation_type": "genre", "direction": "in"}, order="desc", limit=1)
        assert genres[0][1] == max(_link_counts("genre", forward=False).values())
        # a condition narrows the instances counted
        born = ranked("Author", order_by_links={"relation_type": "wrote"}, order="desc", limit=50,
                      condition={"operation": ">", "field": "birth_year", "value": 1900})
        years = {i: int(y) for i, y in _names("authors.csv", "birth_year").items()}
        assert born and all(years[i] > 1900 for i, _ in born)
        for args, says in (({"order_by_links": {"relation_type": "nope"}}, "unknown relation type 'nope'"),
                           ({"order_by_links": {"relation_type": "wrote", "direction": "in"}}, "not its target"),
                           ({"order_by_links": {"relation_type": "wrote"}, "order_by": "birth_year"}, "cannot be"),
                           ({"order_by_links": {"relation_type": "wrote"}, "count_only": True}, "cannot be")):
            with pytest.raises(ToolInputError, match=says):
                query_object_instance(store, ObjectInstanceQuery(kn_id="library", object_type="Author", **args))
    finally:
        store.close()


def test_http_route_orders_by_link_counts(library_db: str, work_settings: Settings) -> None:
    from kgrag.api.app import create_app

    with TestClient(create_app(Settings(work_dir=work_settings.work_dir, database_url=library_db))) as client:
        r = client.post(f"{BASE}/query_object_instance", json={
            "kn_id": "library", "object_type": "Publisher", "order": "desc", "limit": 1,
            "order_by_links": {"relation_type": "published_by", "direction": "in"}})
        assert r.status_code == 200, r.text
        assert r.json()["instances"][0]["links"] == max(_link_counts("published_by", forward=False).values())
        r = client.post(f"{BASE}/query_object_instance", json={
            "kn_id": "library", "object_type": "Publisher", "order_by_links": {"relation_type": "published_by"}})
        assert r.status_code in (400, 422) and "published_by" in r.text


@pytest.mark.parametrize(("question", "relation", "forward", "names", "most"), [
    ("Which author wrote the most books?", "wrote", True, ("authors.csv", "name"), True),
    ("Who wrote the most books?", "wrote", True, ("authors.csv", "name"), True),
    ("Which author wrote the fewest books?", "wrote", True, ("authors.csv", "name"), False),
    ("Which genre has the most books?", "genre", False, ("genres.csv", "name"), True),
    ("Which publisher published the most books?", "published_by", False, ("publishers.csv", "name"), True),
])
def test_agent_answers_the_most_links(library_settings: Settings, question: str, relation: str, forward: bool,
                                      names: tuple[str, str], most: bool) -> None:
    state = ask(question)
    gold = _best(relation, forward, _names(*names), most)
    assert set(state["answers"]) == gold, (state["answers"], state["answer"])
    agg = state["query_graph"]["aggregation"]
    assert agg["counts"] and agg["relation"] == relation and agg["op"] == ("argmax" if most else "argmin")
    assert agg["direction"] == ("out" if forward else "in")
    assert state["unused"] == [] and ("most" if most else "fewest") in state["answer"]
    # each answer's evidence carries its count
    assert {r["property_value"] for r in state["evidence"]} == {max(_link_counts(relation, forward).values()) if most
                                                               else min(_link_counts(relation, forward).values())}


def test_without_query_graphs_the_most_is_not_planned(library_settings: Settings) -> None:
    state = ask("Which author wrote the most books?", query_graphs=False)
    assert state["query_graph"] is None


def _books() -> dict[str, dict[str, str]]:
    with (EXAMPLE / "books.csv").open(encoding="utf-8") as fh:
        return {row["id"]: row for row in csv.DictReader(fh)}


def _linked(relation: str) -> list[tuple[str, str]]:
    with (EXAMPLE / "links.csv").open(encoding="utf-8") as fh:
        return [(row["source_id"], row["target_id"]) for row in csv.DictReader(fh)
                if row["relation_type_id"] == relation]


def test_filter_on_the_middle_without_a_topic(library_settings: Settings) -> None:
    books, genres = _books(), _names("genres.csv", "name")
    gold = {genres[g] for b, g in _linked("genre") if int(books[b]["year"]) < 1900}
    state = ask("Which genres have books published before 1900?")
    assert set(state["answers"]) == gold, state["answer"]
    plan = state["query_graph"]
    assert plan["start_type"] == "Book" and plan["literal_constraint"]["on"] == "middle" and state["unused"] == []
    assert all(int(r["property_value"]) < 1900 for r in state["evidence"])
    assert state["answer"].startswith("book with publication year < 1900 — genre")
    counted = ask("How many genres have books published before 1900?")
    assert counted["answers"] == [str(len(gold))]
    authors = _names("authors.csv", "birth_year")
    born = ask("Which cities have authors born after 1900?")
    assert born["query_graph"]["start_type"] == "Author"
    assert len(born["answers"]) == len({c for a, c in _linked("born_in") if int(authors[a]) > 1900})


def test_filter_on_the_middle_of_a_topic_path(library_settings: Settings) -> None:
    books, genres = _books(), _names("genres.csv", "name")
    orwell = {b for a, b in _linked("wrote") if a == "a:orwell"}
    gold = {genres[g] for b, g in _linked("genre") if b in orwell and int(books[b]["year"]) > 1946}
    state = ask("Which genres does George Orwell write in, for books published after 1946?")
    assert set(state["answers"]) == gold and gold, state["answer"]
    assert state["query_graph"]["literal_constraint"]["on"] == "middle"
    assert "qg:middle" in {c["label"] for c in state["tool_calls"]}


# ---------------------------------------------------------------------------------- medical-shaped, planner only


def _medlike() -> Any:
    from kgrag.network.schema.model import DataProperty, KnowledgeNetwork, ObjectType, RelationType

    name = DataProperty(name="name", condition_operations=["==", "match"])
    disease = ObjectType(id="Disease", name="疾病", comment="疾病", data_properties=[
        name, DataProperty(name="cure_way", display_name="治疗方式", type="string[]")])
    symptom = ObjectType(id="Symptom", name="症状", comment="症状", data_properties=[name])
    department = ObjectType(id="Department", name="科室", comment="科室", data_properties=[name])
    relations = [RelationType(id="has_symptom", name="症状", source_object_type_id="Disease",
                              target_object_type_id="Symptom"),
                 RelationType(id="belongs_to", name="所属科室", source_object_type_id="Disease",
                              target_object_type_id="Department")]
    return KnowledgeNetwork(kn_id="medlike", name="medlike", object_types=[disease, symptom, department],
                            relation_types=relations)


def test_planner_keeps_one_relation_questions_one_relation() -> None:
    from kgrag.query_graph.network_planner import NetworkTopic, has_structure, plan_network, unapplicable_cues

    net = _medlike()
    both = [NetworkTopic("精索静脉曲张", "Disease", "d1", "精索静脉曲张", 2),
            NetworkTopic("精索静脉曲张", "Symptom", "s1", "精索静脉曲张", 2)]
    # one name stored as a disease and a symptom is one topic, not two
    assert not has_structure("得了精索静脉曲张该怎样治", net, both, "prop:cure_way")
    two = [NetworkTopic("糖尿病", "Disease", "d2", "糖尿病", 0), NetworkTopic("乳腺癌", "Disease", "d3", "乳腺癌", 7)]
    # two diseases named, but the best intent is a property of one: no intersection to plan
    assert not has_structure("糖尿病患者中晚期乳腺癌怎么办", net, two, "prop:cure_way")
    assert has_structure("糖尿病和乳腺癌都有哪些症状", net, two, "rel:has_symptom")
    # a bare 多少 asks a value; 多少种 counts things
    one = [NetworkTopic("百日咳", "Disease", "d4", "百日咳", 0)]
    assert not has_structure("百日咳治疗需要多少钱", net, one, "prop:cost_money")
    assert has_structure("百日咳有多少种症状", net, one, "rel:has_symptom")
    plan = plan_network("百日咳有多少种症状", net, one, [("rel:has_symptom", 0.9)])[0]
    assert plan.aggregation is not None and plan.aggregation.op == "count" and plan.answer_type == "Symptom"
    # 最新 on a network without a date: no plan can apply it, the one-relation answer says so
    pain = [NetworkTopic("三叉神经痛", "Disease", "d5", "三叉神经痛", 0)]
    assert unapplicable_cues("三叉神经痛有哪些最新的治疗方法", net, pain) == ["最新"]
    assert not has_structure("三叉神经痛有哪些最新的治疗方法", net, pain, "prop:cure_way")

"""Query graphs on a knowledge network (issue 44 §1, §4, network side), on examples/library loaded through
``kgrag kn load``: query_object_instance's ordering and count (tool, HTTP route, MCP tool), the LLM-free agent's
query-graph plans — count, year filter, superlatives, a type two hops away, two topics, a reverse relation read in
its direction — what a plan leaves out said, abstention below min_confidence, ``query_graphs=False`` keeping
today's planner; and the linked topic's type restricting the labelled intent ranker (a small medical-shaped
network and a ranker trained on a handful of questions: the medical network itself takes ~10 min to load)."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from fastapi.testclient import TestClient
from fixtures.library_kn import ask_library, load_library
from mcp import Client

from kgrag.agent.kn.instance_queries import ObjectInstanceQuery, ToolInputError, query_object_instance
from kgrag.agent.turn.answer_confidence import fitted_confidence
from kgrag.config import Settings
from kgrag.network.store import NetworkStore

BASE = "/api/agent-retrieval/in/v1/kn"


@pytest.fixture(scope="module")
def library_db(tmp_path_factory: pytest.TempPathFactory) -> str:
    return load_library(tmp_path_factory.mktemp("library-qg"))[0]


ask = ask_library


def plan_line(state: dict) -> str:
    return next(e["summary"] for e in state["trace"] if e["node"] == "plan")


# ---------------------------------------------------------------------------------------------- the query tools


def test_tool_orders_by_a_typed_property_and_counts(library_db: str) -> None:
    store = NetworkStore(library_db)
    try:
        def titles(**args: Any) -> list[str]:
            out = query_object_instance(store, ObjectInstanceQuery(kn_id="library", object_type="Book", **args))
            return [i["properties"]["title"] for i in out["instances"]]

        # pages as numbers: 1178 is the most, not the least as text would have it
        assert titles(order_by="pages", order="desc", limit=2) == ["The Lord of the Rings", "Emma"]
        assert titles(order_by="year", limit=1) == ["Pride and Prejudice"]
        assert titles(order_by="year", order="desc", limit=1,
                      condition={"operation": "<", "field": "year", "value": 1900}) == ["Emma"]
        counted = query_object_instance(store, ObjectInstanceQuery(
            kn_id="library", object_type="Book", count_only=True,
            condition={"operation": "<", "field": "year", "value": 1900}))
        assert counted["count"] == 2 and counted["count_only"] and counted["instances"] == []
        with pytest.raises(ToolInputError, match="unknown property 'colour'"):
            query_object_instance(store, ObjectInstanceQuery(kn_id="library", object_type="Book", order_by="colour"))
    finally:
        store.close()


def test_http_route_orders_counts_and_names_a_bad_property(library_db: str, work_settings: Settings) -> None:
    from kgrag.api.app import create_app

    with TestClient(create_app(Settings(work_dir=work_settings.work_dir, database_url=library_db))) as client:
        r = client.post(f"{BASE}/query_object_instance", json={
            "kn_id": "library", "object_type": "Author", "order_by": "birth_year", "order": "desc", "limit": 1})
        assert r.status_code == 200, r.text
        assert r.json()["instances"][0]["properties"]["name"] == "Margaret Atwood" and r.json()["order"] == "desc"
        r = client.post(f"{BASE}/query_object_instance", json={"kn_id": "library", "object_type": "Book",
                                                                "count_only": True})
        assert r.status_code == 200 and r.json()["count"] == 9
        for body, says in (({"order_by": "colour"}, "colour"), ({"order_by": "year", "order": "sideways"}, "order"),
                           ({"count_only": "maybe"}, "count_only")):
            r = client.post(f"{BASE}/query_object_instance", json={"kn_id": "library", "object_type": "Book", **body})
            assert r.status_code in (400, 422) and says in json.dumps(r.json()), (body, r.json())


def test_mcp_tool_orders(library_db: str, work_settings: Settings) -> None:
    from kgrag.mcp.server import McpConfig, build_server
    from kgrag.mcp.tools import ToolContext

    settings = Settings(work_dir=work_settings.work_dir, database_url=library_db)

    async def body(client: Client) -> None:
        result = await client.call_tool("query_object_instance", {
            "kn_id": "library", "object_type": "Book", "order_by": "year", "limit": 2})
        assert not result.is_error, result.content[0].text
        assert [i["id"] for i in result.structured_content["instances"]] == ["b:pride", "b:emma"]
        counted = await client.call_tool("query_object_instance", {"kn_id": "library", "object_type": "Author",
                                                                   "count_only": True})
        assert counted.structured_content["count"] == 6

    async def main() -> None:
        async with Client(build_server(McpConfig(warm=False), context=ToolContext(settings))) as client:
            await body(client)

    anyio.run(main)


# ---------------------------------------------------------------------------------------------- the agent


def test_count_answers_the_number_with_the_counted_books(library_settings: Settings) -> None:
    state = ask("How many books did George Orwell write?")
    assert state["answers"] == ["2"]
    assert {r["value_instance"] for r in state["evidence"]} == {"b:1984", "b:animalfarm"}
    assert state["query_graph"]["aggregation"]["op"] == "count"
    assert "George Orwell -[wrote]-> ?answer (type: book) · count" in plan_line(state)
    assert state["query_graph"]["confidence"] > 0.5 and state["unused"] == []  # the planner's own, then fitted:
    assert state["confidence"] == fitted_confidence("query_graph", state["query_graph"]["confidence"], 0,
                                                    state["cross_check"], state["question"])


def test_year_filter_over_the_answer_type(library_settings: Settings) -> None:
    state = ask("Which books were published before 1900?")
    assert sorted(state["answers"]) == ["Emma", "Pride and Prejudice"]
    assert state["query_graph"]["literal_constraint"]["relation"] == "year"
    assert {r["property_value"] for r in state["evidence"]} == {1813, 1815}
    # with a topic: the author's books, filtered
    state = ask("Which books by George Orwell were published after 1946?")
    assert state["answers"] == ["1984"]


@pytest.mark.parametrize(("question", "answer", "prop", "op"), [
    ("Which is the oldest book?", "Pride and Prejudice", "year", "argmin"),
    ("Who is the youngest author?", "Margaret Atwood", "birth_year", "argmax"),
    ("What is the longest book?", "The Lord of the Rings", "pages", "argmax"),
])
def test_superlatives_order_the_answer_type(library_settings: Settings, question: str, answer: str, prop: str,
                                            op: str) -> None:
    state = ask(question)
    assert state["answers"] == [answer], (state["answer"], plan_line(state))
    assert state["query_graph"]["aggregation"] == {**state["query_graph"]["aggregation"], "op": op, "relation": prop}
    assert state["query_graph"]["topics"] == []


def test_answer_type_two_hops_away(library_settings: Settings) -> None:
    state = ask("What genres does George Orwell write in?")
    assert sorted(state["answers"]) == ["dystopian fiction", "political satire", "science fiction"]
    assert [h["relation"] for h in state["query_graph"]["path"]] == ["wrote", "genre"]
    assert {r["instance"] for r in state["evidence"]} == {"b:1984", "b:animalfarm"}  # via the books


def test_reverse_relation_reads_in_its_direction(library_settings: Settings) -> None:
    state = ask("Who wrote Emma?")
    assert state["answers"] == ["Jane Austen"]
    assert state["answer"] == "Emma — written by: Jane Austen"
    assert state["evidence"][0]["direction"] == "in" and state["evidence"][0]["via"] == "wrote"
    forward = ask("Which books did Jane Austen write?")
    assert forward["answer"] == "Jane Austen — wrote: Emma；Pride and Prejudice"
    assert {r["direction"] for r in forward["evidence"]} == {"out"}
    assert forward["query_graph"] is None  # one relation: today's planner


def test_two_topics_intersect(library_settings: Settings) -> None:
    state = ask("Which fantasy books did J. R. R. Tolkien write?")
    assert sorted(state["answers"]) == ["The Hobbit", "The Lord of the Rings"]
    assert state["query_graph"]["entity_constraint"]["topic"]["name"] in ("fantasy", "J. R. R. Tolkien")
    state = ask("Which dystopian fiction books did George Orwell write?")
    assert state["answers"] == ["1984"]


def test_a_cue_no_property_takes_is_said_and_confidence_can_withhold(library_settings: Settings) -> None:
    state = ask("Which publishers were founded before 1900?")
    assert state["unused"] == ["before 1900"]
    assert "I could not apply 'before 1900'" in state["answer"]
    withheld = ask("Which publishers were founded before 1900?", min_confidence=0.9)
    assert withheld["answers"] == [] and "not sure enough" in withheld["answer"]
    assert "Secker & Warburg" in withheld["withheld"]


def test_query_graphs_off_keeps_todays_planner(library_settings: Settings) -> None:
    state = ask("How many books did George Orwell write?", query_graphs=False)
    assert state["query_graph"] is None and sorted(state["answers"]) == ["1984", "Animal Farm"]
    # a number property asked with "how many" stays a property look-up
    state = ask("How many pages does The Hobbit have?")
    assert state["answers"] == ["310"] and state["query_graph"] is None


# ---------------------------------------------------------------------------------------------- labelled ranker


def _medical_shaped() -> Any:
    from kgrag.network.loaders.medical import MEDICAL_RELATION_TYPES
    from kgrag.network.schema.model import DataProperty, KnowledgeNetwork, ObjectType, RelationType

    name = DataProperty(name="name", condition_operations=["==", "match"])
    disease = ObjectType(id="Disease", name="疾病", comment="疾病：名称、治疗方式",
                         data_properties=[name, DataProperty(name="cure_way", display_name="治疗方式",
                                                             type="string[]", comment="疾病的治疗方法，怎么治")])
    department = ObjectType(id="Department", name="科室", comment="医院的科室", data_properties=[name])
    relations = [RelationType(id=rid, name=MEDICAL_RELATION_TYPES[rid][2], comment=MEDICAL_RELATION_TYPES[rid][3],
                              source_object_type_id=MEDICAL_RELATION_TYPES[rid][0],
                              target_object_type_id=MEDICAL_RELATION_TYPES[rid][1])
                 for rid in ("acompany_with", "belongs_to", "department_belongs_to")]
    return KnowledgeNetwork(kn_id="medlike", name="medical-shaped", object_types=[disease, department],
                            relation_types=relations)


def test_linked_topic_type_restricts_the_labelled_ranker(tmp_path_factory: pytest.TempPathFactory) -> None:
    """儿科 is a Department: a labelled ranker never taught a Department label would answer a Disease relation
    (complications of some contains-matched disease); restricted to the topic's type, the zero-shot ranking of
    the candidates that start at a Department answers — the relation ending at the department, backwards."""
    from kgrag.agent.kn.intent import IntentRanker
    from kgrag.agent.kn.intent_sources import IntentPlanner
    from kgrag.agent.kn.linking import InstanceMatch
    from kgrag.agent.kn.planner import next_call
    from kgrag.agent.kn.schema_candidates import build_profile
    from kgrag.agent.kn.zero_shot import ZeroShotSchemaRanker
    from kgrag.rank.sentence_embedder import Embedder

    taught = {"rel:acompany_with": ["糖尿病有什么并发症", "百日咳会引起什么病", "感冒的并发症有哪些", "高血压会并发哪些疾病",
                                    "肺炎有哪些并发疾病"],
              "rel:belongs_to": ["糖尿病挂什么科", "百日咳属于哪个科室", "感冒去哪个科", "肺炎属于什么科"],
              "prop:cure_way": ["糖尿病怎么治疗", "百日咳如何治", "感冒的治疗方法", "肺炎怎么治疗"]}
    questions = [q for qs in taught.values() for q in qs]
    labels = [label for label, qs in taught.items() for _ in qs]
    topics = [next(t for t in ("糖尿病", "百日咳", "感冒", "高血压", "肺炎") if t in q) for q in questions]
    ranker = IntentRanker.train(questions, labels, topics=topics)
    network = _medical_shaped()
    names = [("Department", "Department:儿科", "儿科"), ("Department", "Department:内科", "内科"),
             ("Disease", "Disease:男科病", "男科病"), ("Disease", "Disease:百日咳", "百日咳")]
    embedder = Embedder(cache_dir=tmp_path_factory.mktemp("medlike-embeddings"))
    planner = IntentPlanner("labelled", labelled=ranker,
                            fallback=lambda: ZeroShotSchemaRanker(build_profile(network, names), embedder))
    question = "儿科有哪些疾病"
    assert ranker.rank(question, "儿科")[0][0] != "rel_in:belongs_to"  # unrestricted: a label it was taught
    intents = planner.rank(question, "儿科", ["Department"])
    assert intents and intents[0][0] == "rel_in:belongs_to", intents
    assert all(label.startswith(("rel:department_belongs_to", "rel_in:")) for label, _ in intents)
    # a Disease topic keeps the labelled ranking (renormalised over the Disease labels)
    disease = planner.rank("百日咳有什么并发症", "百日咳", ["Disease"])
    assert disease[0][0] == "rel:acompany_with" and abs(sum(p for _, p in disease) - 1.0) < 1e-6
    candidates = [InstanceMatch("儿科", "Department", "Department:儿科", "exact", "儿科", 0),
                  InstanceMatch("男科病", "Disease", "Disease:男科病", "contains", "科病", -1, 0.67)]
    call, label, topic = next_call(intents, candidates, network, "medlike", tried=set())
    assert (label, topic.name) == ("rel_in:belongs_to", "儿科")
    assert call["args"]["relation_type_path"] == [{"relation_type": "belongs_to", "direction": "in"}]

"""Query graphs on a triple KG (issue 44): the SPARQL executor (:mod:`kgrag.query_graph.sparql`) and the LLM-free
planner (:mod:`kgrag.query_graph.triple_planner`) on a small Turtle graph written here (readable predicates,
rdfs:label names, rdf:type classes, xsd:date / gYear / dateTime, a CVT), in a real embedded pyoxigraph store; one
question per kind; then the agent on the demo KG without a trained reasoner: the quickstart's three suggestions,
the 18 questions, ``query_graphs=False`` keeping today's plan, and abstention below ``min_confidence``."""

from __future__ import annotations

from pathlib import Path

import pytest
from query_graph_kg import scientists_client

from kgrag.agent.kg.zero_shot import ZeroShotChainRanker
from kgrag.agent.turn.answer_confidence import fitted_confidence
from kgrag.query_graph.plan import Aggregation, EntityConstraint, Hop, LiteralConstraint, QueryGraph, Topic
from kgrag.query_graph.sparql import QueryExecutor
from kgrag.query_graph.triple_planner import KGTopic, TriplePlanner
from kgrag.rank.sentence_embedder import Embedder
from kgrag.tools.client import KGClient


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> KGClient:
    return scientists_client(tmp_path_factory.mktemp("scientists"))


@pytest.fixture(scope="module")
def ids(client: KGClient) -> dict[str, str]:
    """``curie`` → the imported id (``e.curie_<hash>``) of each node with a readable IRI."""
    rows = client.store.select(f"SELECT DISTINCT ?e WHERE {{ ?e ?p ?o FILTER(STRSTARTS(STR(?e), \"{client.base}\")) }}")
    out = {}
    for row in rows:
        local = row["e"].value[len(client.base):]
        if local.startswith("e."):
            out[local[2:].rsplit("_", 1)[0]] = local
    return out


@pytest.fixture(scope="module")
def executor(client: KGClient) -> QueryExecutor:
    return QueryExecutor(client)


@pytest.fixture(scope="module")
def planner(client: KGClient) -> TriplePlanner:
    return TriplePlanner(ZeroShotChainRanker(client, Embedder(cache_dir=None)))


def _topic(ids: dict[str, str], key: str, name: str) -> Topic:
    return Topic(name=name, id=ids[key])


def _labels(executor: QueryExecutor, plan: QueryGraph) -> list[str]:
    return [a.label for a in executor.run(plan).answers]


# ---------------------------------------------------------------------------------------------- the executor
def test_count_is_the_number_with_the_counted_items_as_evidence(executor, ids) -> None:
    plan = QueryGraph(topics=[_topic(ids, "curie", "Marie Curie")], path=[Hop(relation="won")],
                      aggregation=Aggregation(op="count"))
    run = executor.run(plan)
    assert [a.label for a in run.answers] == ["3"] and run.count == 3
    assert sorted(a.label for a in run.items) == ["Davy Medal", "Nobel Prize in Chemistry", "Nobel Prize in Physics"]
    assert "COUNT(DISTINCT ?x)" in run.sparql and run.checked == 3 and all(run.held)


def test_year_filter_compares_date_gyear_and_datetime_as_years(executor, ids) -> None:
    physics = _topic(ids, "nobelphysics", "Nobel Prize in Physics")
    before = QueryGraph(topics=[physics], path=[Hop(relation="won", direction="in")],
                        literal_constraint=LiteralConstraint(relation="birthDate", op="<", value=1900, kind="year"))
    # Curie 1867-11-07 (date), Pierre 1859 (date), Einstein 1879 (gYear), Bohr 1885 (dateTime); Feynman 1918 out
    assert _labels(executor, before) == ["Albert Einstein", "Marie Curie", "Niels Bohr", "Pierre Curie"]
    decade = before.model_copy(update={"literal_constraint": LiteralConstraint(
        relation="birthDate", op="between", value=1880, value2=1889, kind="year")})
    assert _labels(executor, decade) == ["Niels Bohr"]


def test_a_constraint_on_values_that_do_not_compare_is_reported_not_dropped(executor, ids) -> None:
    plan = QueryGraph(topics=[_topic(ids, "nobelphysics", "Nobel Prize in Physics")],
                      path=[Hop(relation="won", direction="in")],
                      literal_constraint=LiteralConstraint(relation="bornIn", op="<", value=1900, kind="year",
                                                           text="before 1900"))
    run = executor.run(plan)
    assert run.not_applied == ["before 1900: bornIn holds no comparable year here"]
    assert len(run.answers) == 5  # the unconstrained winners, said so


def test_superlatives_keep_ties_and_rank_by_a_count(executor, ids) -> None:
    physics = _topic(ids, "nobelphysics", "Nobel Prize in Physics")
    winners = [Hop(relation="won", direction="in")]
    oldest = QueryGraph(topics=[physics], path=winners,
                        aggregation=Aggregation(op="argmin", relation="birthDate", kind="date"))
    assert _labels(executor, oldest) == ["Pierre Curie"]
    first = QueryGraph(topics=[_topic(ids, "curie", "Marie Curie")], path=[Hop(relation="won")],
                       aggregation=Aggregation(op="argmax", relation="firstAwarded", kind="year"))
    assert _labels(executor, first) == ["Nobel Prize in Chemistry", "Nobel Prize in Physics"]  # both 1901: a tie
    most = QueryGraph(topics=[physics], path=winners, aggregation=Aggregation(op="argmax", relation="won", counts=True))
    assert _labels(executor, most) == ["Marie Curie"]
    two = most.model_copy(update={"aggregation": Aggregation(op="argmax", relation="won", counts=True, limit=2)})
    assert _labels(executor, two) == ["Marie Curie", "Pierre Curie"]


def test_intersection_middle_constraint_and_evidence_direction(executor, ids) -> None:
    both = QueryGraph(topics=[_topic(ids, "nobelphysics", "Nobel Prize in Physics")],
                      path=[Hop(relation="won", direction="in")],
                      entity_constraint=EntityConstraint(topic=_topic(ids, "davymedal", "Davy Medal"),
                                                         path=[Hop(relation="won", direction="in")]))
    run = executor.run(both)
    assert [a.label for a in run.answers] == ["Marie Curie", "Pierre Curie"]
    hop = run.evidence[0]["hops"][0]  # read from the topic, against the stored direction
    assert hop == {"from": "Nobel Prize in Physics", "relation": "won", "label": "won", "direction": "in",
                   "to": "Marie Curie"}
    assert run.evidence[0]["triples"] == [["Marie Curie", "won", "Nobel Prize in Physics"]]
    employer = QueryGraph(topics=[_topic(ids, "curie", "Marie Curie")],
                          path=[Hop(relation="position"), Hop(relation="employer")],
                          literal_constraint=LiteralConstraint(relation="startYear", op=">", value=1900,
                                                               kind="year", on="middle"))
    assert _labels(executor, employer) == ["Sorbonne"]
    late = employer.model_copy(update={"literal_constraint": employer.literal_constraint.model_copy(
        update={"value": 1950})})
    assert _labels(executor, late) == []  # comparable values exist, none passes: no answer, nothing dropped


def test_ids_and_relations_never_reach_the_text_unchecked(executor, ids) -> None:
    bad = QueryGraph(topics=[Topic(name="x", id="e.x_00000000> } DROP ALL {")], path=[Hop(relation="won")])
    with pytest.raises(ValueError, match="invalid"):
        executor.run(bad)
    with pytest.raises(ValueError, match="invalid relation"):
        executor.run(QueryGraph(topics=[_topic(ids, "curie", "Marie Curie")], path=[Hop(relation="won> ?x")]))


# ---------------------------------------------------------------------------------------------- the planner
KINDS = [
    ("one-hop", "Where was Albert Einstein born?", [("einstein", "Albert Einstein")], ["Ulm"]),
    ("reverse", "Who won the Davy Medal?", [("davymedal", "Davy Medal")], ["Marie Curie", "Pierre Curie"]),
    ("two hops, named middle", "In which city was the spouse of Marie Curie born?", [("curie", "Marie Curie")],
     ["Paris"]),
    ("answer type", "In which country was Albert Einstein born?", [("einstein", "Albert Einstein")], ["Germany"]),
    ("count", "How many prizes did Marie Curie win?", [("curie", "Marie Curie")], ["3"]),
    ("year filter", "Which winners of the Nobel Prize in Physics were born before 1900?",
     [("nobelphysics", "Nobel Prize in Physics")], ["Albert Einstein", "Marie Curie", "Niels Bohr", "Pierre Curie"]),
    ("superlative", "Who is the oldest winner of the Nobel Prize in Physics?",
     [("nobelphysics", "Nobel Prize in Physics")], ["Pierre Curie"]),
    ("two topics", "Who won both the Nobel Prize in Physics and the Davy Medal?",
     [("nobelphysics", "Nobel Prize in Physics"), ("davymedal", "Davy Medal")], ["Marie Curie", "Pierre Curie"]),
    ("literal", "When was Niels Bohr born?", [("bohr", "Niels Bohr")], ["1885-10-07T00:00:00"]),
]


@pytest.mark.parametrize(("kind", "question", "topics", "gold"), KINDS, ids=[k[0] for k in KINDS])
def test_the_planner_answers_each_kind(planner, executor, ids, kind, question, topics, gold) -> None:
    planned = planner.plan(question, [KGTopic(ids[k], name, name) for k, name in topics])
    assert planned.best is not None, planned.reason
    run = executor.run(planned.best)
    assert sorted(a.label for a in run.answers) == gold, planned.best.describe()
    assert planned.best.unused == [] and 0.5 < planned.best.confidence <= 1.0
    assert planned.candidates and all(c.score <= planned.best.score for c in planned.candidates)


def test_the_plan_stops_where_the_type_fits_and_extends_where_it_does_not(planner, ids) -> None:
    winners = planner.plan("Which winners of the Nobel Prize in Physics were born before 1900?",
                           [KGTopic(ids["nobelphysics"], "Nobel Prize in Physics")]).best
    assert [(h.relation, h.direction) for h in winners.path] == [("won", "in")]  # the winners, not their cities
    assert winners.literal_constraint.relation == "birthDate" and winners.literal_constraint.op == "<"
    country = planner.plan("In which country was Albert Einstein born?",
                           [KGTopic(ids["einstein"], "Albert Einstein")]).best
    assert [h.relation for h in country.path] == ["bornIn", "locatedIn"] and country.answer_type_label == "Country"


def test_a_class_node_loses_to_the_entity_and_a_missing_topic_says_why(planner, ids) -> None:
    planned = planner.plan("Which prizes did Marie Curie win?",
                           [KGTopic(ids["prize"], "Prize", "prizes", score=1.0),
                            KGTopic(ids["curie"], "Marie Curie", "Marie Curie", score=1.0)])
    assert planned.best.topics[0].name == "Marie Curie"
    none = planner.plan("How many prizes are there?", [])
    assert none.best is None and none.reason == "no topic: the question names no node of the graph"


def test_an_unusable_cue_is_named_and_lowers_the_confidence(planner, ids) -> None:
    planned = planner.plan("Which prizes did Marie Curie win with more than 300 pages?",
                           [KGTopic(ids["curie"], "Marie Curie", "Marie Curie")])
    assert planned.best.unused == ["more than 300 pages"] and planned.best.confidence <= 0.5


# ---------------------------------------------------------------------------------------------- the agent (demo)
def _ask(question: str, **context) -> dict:
    from graphs.agent.context import AgentContext
    from graphs.agent.graph import graph

    return graph.invoke({"question": question, "kg": "demo"}, context=AgentContext(kg="demo", **context))


def test_the_quickstart_suggestions_are_answered_right(demo_untrained_settings) -> None:
    from kgrag.prep.next_steps import sample_questions

    questions = sample_questions(demo_untrained_settings.dataset_dir("demo"))
    assert questions == ["who directed Carnival Lights?", "in which country was Ines Kamau born?",
                         "in which cities are the teams of Uma Oyelaran based?"]
    answers = [_ask(q) for q in questions]
    assert [sorted(s["answers"]) for s in answers] == [["Uma Halvorsen"], ["Canada"], ["Nairobi", "Paris"]]
    state = answers[1]
    assert [c["name"] for c in state["tool_calls"]] == ["query_graph"]
    plan = QueryGraph.model_validate(state["query_graph"])
    assert plan.describe() in state["answer"] and plan.confidence > 0.5
    # the plan's own confidence, fitted to data with the cross-check against the plan over the KG's classes
    assert state["confidence"] == fitted_confidence("query_graph", plan.confidence, 0, state["cross_check"],
                                                                   state["question"]) > 0
    assert state["unused"] == [] and state["query_graph_candidates"]
    assert any(t["node"] == "plan" and t["summary"] == f"plan: {plan.describe()}" for t in state["trace"])
    assert state["evidence"][0]["hops"][-1]["to"] == "Canada" and state["evidence"][0]["verified"] is True


def test_the_demo_questions_without_a_reasoner(demo_untrained_settings) -> None:
    import json

    rows = [json.loads(line) for line in (demo_untrained_settings.dataset_dir("demo") / "questions.jsonl").open()]
    f1 = []
    for row in rows:
        predicted, gold = {a.lower() for a in _ask(row["text"])["answers"]}, {a.lower() for a in row["answer_names"]}
        hit = len(predicted & gold)
        f1.append(2 * hit / (len(predicted) + len(gold)) if hit else 0.0)
    assert len(rows) == 18 and sum(f1) / len(f1) >= 0.9  # 12 of 18 right with the chain ranker alone


def test_query_graphs_off_keeps_todays_plan_and_low_confidence_abstains(demo_untrained_settings) -> None:
    off = _ask("in which country was Ines Kamau born?", query_graphs=False)
    assert [c["name"] for c in off["tool_calls"]] == ["rank_chains"] and off["query_graph"] is None
    unsure = _ask("in which country was Ines Kamau born?", min_confidence=1.0)
    assert unsure["answers"] == [] and "I am not sure enough to answer" in unsure["answer"]
    assert "My best guess is Canada" in unsure["answer"] and unsure["query_graph"] is not None


def test_a_count_on_the_demo_kg(demo_untrained_settings) -> None:
    state = _ask("how many films did Jonas Halvorsen act in?")
    assert state["answers"] == ["3"] and "Counted:" in state["answer"]
    assert QueryGraph.model_validate(state["query_graph"]).aggregation.op == "count"


def test_the_test_graph_is_written_as_a_user_would(tmp_path: Path) -> None:
    client = scientists_client(tmp_path)
    rows = client.store.select(f"SELECT (COUNT(*) AS ?n) WHERE {{ ?s <{client.base}type> ?c }}")
    assert int(rows[0]["n"].value) == 25  # rdf:type edges imported as the relation ``type``


# ---------------------------------------------------------------------------------------------- over a class
def test_a_plan_without_a_topic_ranges_over_its_answer_type(executor, ids) -> None:
    born = QueryGraph(topics=[], path=[], answer_type=ids["person"], answer_type_label="Person",
                      literal_constraint=LiteralConstraint(relation="birthDate", op="<", value=1870, kind="year"))
    assert _labels(executor, born) == ["Marie Curie", "Pierre Curie"]
    largest = QueryGraph(topics=[], path=[], answer_type=ids["city"], answer_type_label="City",
                         aggregation=Aggregation(op="argmax", relation="population", kind="number"))
    run = executor.run(largest)
    assert [a.label for a in run.answers] == ["Cairo"] and run.checked == 0  # no path: nothing said checked
    with pytest.raises(ValueError, match="start_type"):
        executor.run(QueryGraph(topics=[], path=[Hop(relation="won")], answer_type=ids["prize"],
                                start_type=ids["person"], literal_constraint=LiteralConstraint(
                                    relation="birthDate", op="<", value=1900, kind="year", on="middle")))


def test_the_planner_plans_over_a_class_and_drops_topics_read_from_a_cue(planner, executor, ids) -> None:
    # the class linked from the question's words, and a year the linker took for a node: neither is a topic
    planned = planner.plan("Which people were born before 1870?",
                           [KGTopic(ids["person"], "Person", "people"),
                            KGTopic(ids["einstein"], "Albert Einstein", "1870", score=1.0)])
    best = planned.best
    assert best is not None and best.topics == [] and best.answer_type == ids["person"], planned.reason
    assert best.literal_constraint.relation == "birthDate"
    assert sorted(_labels(executor, best)) == ["Marie Curie", "Pierre Curie"]
    oldest = planner.plan("Which is the oldest university?", []).best
    assert oldest is not None and oldest.aggregation.relation == "founded"
    assert _labels(executor, oldest) == ["Sorbonne"]
    # a name the question says beats a plan over the whole class that ignores it
    named = planner.plan("Who is the oldest winner of the Nobel Prize in Physics?",
                         [KGTopic(ids["nobelphysics"], "Nobel Prize in Physics")]).best
    assert named.topics and _labels(executor, named) == ["Pierre Curie"]


def test_a_second_name_inside_the_first_is_not_a_second_topic(planner, executor, ids) -> None:
    planned = planner.plan("Who won the Nobel Prize in Physics?",
                           [KGTopic(ids["nobelphysics"], "Nobel Prize in Physics", "Nobel Prize in Physics"),
                            KGTopic(ids["paris"], "Paris", "Physics")])  # words inside the longer name
    assert planned.best.topics[0].name == "Nobel Prize in Physics" and planned.best.entity_constraint is None


def test_a_cue_inside_a_name_asks_nothing_and_long_words_are_not_their_prefix() -> None:
    from kgrag.query_graph.cues import read_cues
    from kgrag.query_graph.triple_planner import _alike, _without_cues_in_names

    question = "Where was the director of The Last Cartographer born?"
    cues = read_cues(question)
    assert cues.superlative is not None and cues.answer_words == ["cartographer"]  # read as "the last …"
    named = _without_cues_in_names(cues, [KGTopic("e.x_00000001", "The Last Cartographer",
                                                         "The Last Cartographer")])
    assert named.superlative is None and named.answer_words == [] and named.answer_kind == "place"
    kept = _without_cues_in_names(read_cues("Who is the last winner of the Davy Medal?"),
                                  [KGTopic("e.x_00000002", "Davy Medal", "Davy Medal")])
    assert kept.superlative is not None
    assert _alike("founded", "founder") and not _alike("birthplace", "birth")


def test_the_agent_answers_over_a_class_on_the_demo_kg(demo_untrained_settings) -> None:
    # the linker takes "2002" for a node; the plan ranges over the films instead
    state = _ask("which films were released after 2002?")
    plan = QueryGraph.model_validate(state["query_graph"])
    assert plan.topics == [] and plan.literal_constraint.op == ">" and plan.literal_constraint.value == 2002
    assert sorted(state["answers"]) == ["A River Called Home", "Carnival Lights", "Neon Rain", "The Glass Orchard",
                                        "The Last Cartographer", "The Silent Harbor"]
    assert plan.describe() in state["answer"] and "checked on the store" not in state["answer"]
    youngest = _ask("Who is the youngest person?")
    assert youngest["answers"] == ["Mariana Nakamura"]


def test_plural_type_words_keep_their_stem_and_plain_questions_trust_the_chain() -> None:
    from kgrag.query_graph.cues import read_cues
    from kgrag.query_graph.triple_planner import _structured
    from kgrag.reading.words import noun_stem as _stem

    # "languages spoken" names a language; "places" a place ("es" goes only after s / x / z / ch / sh)
    assert [_stem(w) for w in ("languages", "places", "countries", "boxes", "churches", "class")] == \
        ["language", "place", "country", "box", "church", "class"]
    curie = [KGTopic("e.curie_1", "Marie Curie", "Marie Curie", 1.0)]
    assert not _structured(read_cues("who are Marie Curie's parents?"), curie)
    assert not _structured(read_cues("where was Marie Curie born?"), curie)
    for asked in ("In which country was Marie Curie born?", "When was Marie Curie born?",
                  "How many prizes did Marie Curie win?"):
        assert _structured(read_cues(asked), curie), asked
    two = [*curie, KGTopic("e.sorbonne", "Sorbonne", "Sorbonne", 1.0)]
    assert _structured(read_cues("where did Marie Curie meet Sorbonne?"), two)

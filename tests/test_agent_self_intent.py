"""The LLM-free network agent without labelled questions: type-aware candidates, answer-type matching, the
synthesiser, the self-supervised ranker, and the KGRAG_AGENT_INTENT routing (real stores, the real agent graph)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from graphs.agent.context import AgentContext
from graphs.agent.graph import graph
from kgrag.agent.kn.planner import topic_type
from kgrag.agent.kn.schema_candidates import network_profile, value_kinds
from kgrag.agent.kn.self_ranker import SelfRanker
from kgrag.agent.kn.zero_shot import ZeroShotSchemaRanker, answer_classes
from kgrag.agent.training.synthesise import synthesise
from kgrag.config import get_settings
from kgrag.network.loaders.declarative import load_declarative
from kgrag.network.loaders.demo import demo_network
from kgrag.network.store import NetworkStore

TINY = Path(__file__).parent / "network_tiny" / "clinic.yaml"


@pytest.fixture(scope="module")
def demo_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, NetworkStore]]:
    url = f"sqlite:///{tmp_path_factory.mktemp('self-intent') / 'kn.db'}"
    store = NetworkStore(url)
    store.load(*demo_network())
    store.load(*load_declarative(TINY))
    yield url, store
    store.close()


@pytest.fixture
def demo_env(demo_store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The agent on the demo network, a fresh work dir (no trained ranker), an empty data dir (no labelled file)."""
    monkeypatch.setenv("KGRAG_DATABASE_URL", demo_store[0])
    monkeypatch.setenv("KGRAG_WORK_DIR", str(tmp_path / "work"))
    monkeypatch.setenv("KGRAG_DATA_DIR", str(tmp_path / "no-data"))
    monkeypatch.setenv("KGRAG_LLM_BASE_URL", "")
    monkeypatch.delenv("KGRAG_AGENT_INTENT", raising=False)
    get_settings.cache_clear()
    yield demo_store[0]
    get_settings.cache_clear()


def last_json(output: str) -> dict:
    """The JSON object a ``--json`` command prints last (progress lines on stderr come mixed in)."""
    return json.loads(next(line for line in reversed(output.strip().splitlines()) if line.startswith("{")))


def ask(question: str, kn_id: str = "demo") -> dict:
    return graph.invoke({"question": question, "kn_id": kn_id}, context=AgentContext())


def test_candidates_start_at_the_topic_type(demo_store) -> None:
    store = demo_store[1]
    profile = network_profile(store, "demo")
    network = store.get_network("demo")
    person = [profile.candidates[i] for i in profile.for_types(["Person"])]
    assert person and all(topic_type(network, c.label) == "Person" for c in person)
    labels = {c.label for c in person}
    assert "rel:people.person.place_of_birth" in labels and "rel_in:film.film.directed_by" in labels
    assert not any(c.label == "rel:film.film.genre" for c in person)  # a Film's relation is no Person candidate


@pytest.mark.parametrize("question", ["Where was Jonas Okafor born", "what year was Jonas Okafor born in?",
                                      "which country does Jonas Okafor come from", "Jonas Okafor's job?"])
def test_a_person_question_is_never_answered_through_another_types_relation(demo_env, question: str) -> None:
    state = ask(question)
    network = NetworkStore(demo_env).get_network("demo")
    assert state["schema"]["ranker"] == "zero-shot" and state["answers"]
    assert all(topic_type(network, c["label"]) == "Person" for c in state["tool_calls"] if c.get("label"))


def test_answer_classes_from_question_words() -> None:
    assert answer_classes("Where was she born?") == {"place": 1.0}
    assert answer_classes("when did it come out") == {"time": 1.0}
    assert answer_classes("what year was it released") == {"time": 1.0}
    assert answer_classes("how many cities does it have") == {"number": 1.0}
    assert answer_classes("what kind of film is it") == {"category": 1.0}
    assert answer_classes("who directed it") == {"person": 1.0}
    assert answer_classes("百日咳怎么治疗") == {"manner": 1.0} and answer_classes("哪些人容易得") == {"person": 1.0, "list": 1.0}
    assert answer_classes("which films did she make") == {"list": 1.0} and answer_classes("tell me about it") == {}


def test_value_kinds_read_years_dates_and_numbers() -> None:
    assert value_kinds(["1982", "2001", "1970"])["time"] == 1.0
    assert value_kinds(["2020-01-02", "1999/3/4"])["time"] == 1.0
    assert value_kinds(["12", "3.5", "98%"]) == {"time": 0.0, "number": 1.0, "long_text": 0.0}
    assert value_kinds(["Paris", "Osaka"]) == {"time": 0.0, "number": 0.0, "long_text": 0.0}
    assert value_kinds(["A long passage of text that describes the thing at some length."])["long_text"] == 1.0
    assert value_kinds([], "date")["time"] == 1.0 and value_kinds([], "integer")["number"] == 1.0


def test_the_answer_type_decides_between_relations_of_the_same_words(demo_store) -> None:
    store = demo_store[1]
    ranker = ZeroShotSchemaRanker(network_profile(store, "demo"), store.embedder_for("demo"))
    best = {q: ranker.rank(q, "Ines Kamau", ["Person"], top=1)[0][0]
            for q in ("Where was Ines Kamau born?", "When was Ines Kamau born?")}
    assert best == {"Where was Ines Kamau born?": "rel:people.person.place_of_birth",
                    "When was Ines Kamau born?": "rel:people.person.date_of_birth"}
    film = ranker.rank("what kind of movie is Night Train", "Night Train", ["Film"], top=1)[0][0]
    assert film == "rel:film.film.genre"


def test_the_synthesiser_is_seeded_and_reads_only_the_network(demo_store) -> None:
    store = demo_store[1]
    profile = network_profile(store, "clinic")
    names = store.instance_names("clinic")
    first, again = synthesise(profile, names, seed=3), synthesise(profile, names, seed=3)
    assert first == again and first != synthesise(profile, names, seed=4)
    labels = {q.label for q in first}
    assert labels <= {c.label for c in profile.candidates}
    assert {"prop:cure_way", "prop:cost", "rel:has_symptom", "rel_in:has_symptom"} <= labels
    assert all(q.topic in q.question for q in first)
    ranker = SelfRanker.train([q.question for q in first], [q.label for q in first], [q.topic for q in first])
    sims = ranker.similarities("感冒有哪些症状呢", ["prop:cure_way", "rel:has_symptom"], "感冒")
    assert sims[1] > sims[0]


def test_intent_routing_and_its_report(demo_env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kgrag.cli import app

    question = "who directed Carnival Lights?"
    assert ask(question)["schema"]["ranker"] == "zero-shot"  # auto, nothing trained
    monkeypatch.setenv("KGRAG_AGENT_INTENT", "self")
    get_settings.cache_clear()
    state = ask(question)
    assert state["schema"]["ranker"] == "zero-shot" and "no self-supervised ranker" in state["schema"]["note"]
    runner = CliRunner()
    trained = runner.invoke(app, ["train-intent", "--kn", "demo", "--source", "self", "--json"])
    assert trained.exit_code == 0, trained.output
    figures = last_json(trained.output)
    assert figures["source"] == "self" and figures["questions"] > 100 and figures["labels"] > 10
    get_settings.cache_clear()
    state = ask(question)
    assert state["schema"]["ranker"] == "self" and "Uma Halvorsen" in state["answers"]
    monkeypatch.setenv("KGRAG_AGENT_INTENT", "none")
    get_settings.cache_clear()
    assert ask(question)["schema"]["ranker"] == "zero-shot"
    monkeypatch.setenv("KGRAG_AGENT_INTENT", "auto")
    get_settings.cache_clear()
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"question": question, "answers": ["Uma Halvorsen"]}) + "\n", encoding="utf-8")
    report = runner.invoke(app, ["agent-eval", "--questions", str(questions), "--kn", "demo", "--json"])
    assert report.exit_code == 0, report.output
    assert last_json(report.output)["intent_planner"] == "self"
    labelled = runner.invoke(app, ["train-intent", "--kn", "demo", "--source", "self", "--questions", str(questions)])
    assert labelled.exit_code == 1 and "--questions needs --source labelled" in labelled.output
    unknown = runner.invoke(app, ["train-intent", "--kn", "nosuch", "--source", "self"])
    assert unknown.exit_code == 1 and "no knowledge network 'nosuch' is loaded" in unknown.output
    assert "Traceback" not in unknown.output


def test_phrase_neighbours_keep_only_other_words_for_a_phrase(demo_store) -> None:
    from kgrag.agent.training.synthesise import phrase_neighbours

    profile = network_profile(demo_store[1], "clinic")  # a Chinese schema: 症状, 疾病的症状, …
    table = {"症状": [("临床表现", 0.8), ("症状学", 0.9), ("疾病", 0.9), ("体征", 0.6)]}
    found = phrase_neighbours(profile, lambda word, k: table.get(word, []), chinese=True)
    # 症状学 holds the word, 疾病 is another phrase's word, 体征 is too far: only 临床表现 is another word for it
    assert found == {"症状": ["临床表现"]}


def test_how_many_asks_for_a_number_on_a_network_of_its_own(tmp_path: Path) -> None:
    store = NetworkStore(f"sqlite:///{tmp_path / 'lib.db'}")
    try:
        store.load(*load_declarative(Path(__file__).parents[1] / "examples" / "library" / "library.yaml"))
        ranker = ZeroShotSchemaRanker(network_profile(store, "library"), store.embedder_for("library"))
        best = {q: ranker.rank(q, "The Hobbit", ["Book"], top=1)[0][0]
                for q in ("How many pages does The Hobbit have?", "When was The Hobbit published?",
                          "Who wrote The Hobbit?", "What kind of book is The Hobbit?")}
    finally:
        store.close()
    assert best["How many pages does The Hobbit have?"] == "prop:pages"
    assert best["When was The Hobbit published?"] == "prop:year"
    assert best["Who wrote The Hobbit?"] == "rel_in:wrote"
    assert best["What kind of book is The Hobbit?"] == "rel:genre"


def test_unnamed_node_types_give_two_step_candidates(demo_env) -> None:
    from kgrag.agent.kn.schema_candidates import unnamed_types

    store = NetworkStore(demo_env)
    network = store.get_network("demo")
    assert unnamed_types(network, store.instance_names("demo")) == {"Performance", "Marriage", "PositionHeld",
                                                                   "Roster"}
    labels = {c.label for c in network_profile(store, "demo").candidates}
    assert "path:rel:film.actor.film|rel:film.performance.character" in labels
    assert "rel:film.actor.film" not in labels  # one step into a CVT answers with unnamed nodes
    state = ask("what characters did Greta Ishikawa play")
    assert state["tool_calls"][0]["label"] == "path:rel:film.actor.film|rel:film.performance.character"
    assert set(state["answers"]) == {"Doctor Gus", "Captain Finn", "Detective Dex"}
    spouse = ask("who is Ines Kamau married to?")
    assert spouse["answers"] == ["Odile Quintero"]  # the path back to a Person leaves the topic out

"""The agent graph in LangGraph's messages convention (in-process): a run whose input is only ``messages`` (the last
human message is the question; ``kg`` / ``kn_id`` from the input or the run context), the answer appended as an
AI message, ``question`` winning over messages, an input with no question refused saying why, follow-ups through
``history`` and through a thread's checkpointed state, and the JSON the CLI prints."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from typer.testing import CliRunner

from graphs.agent.context import AgentContext
from graphs.agent.graph import build_graph, graph
from kgrag.agent.turn.messages import plain_state, question_from
from kgrag.cli import app
from kgrag.config import get_settings
from kgrag.network.loaders.demo import demo_network
from kgrag.network.store import NetworkStore

DIRECTED = "who directed Carnival Lights?"
SPOUSE = "who is Jonas Quintero's spouse?"


def user(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


def kinds(state: dict) -> list[str]:
    return [m.type for m in state["messages"]]


# -- the question of a turn (no stores) ---------------------------------------------------------------------------


def test_question_from_the_state() -> None:
    assert question_from({"messages": [user("a"), {"role": "assistant", "content": "b"}, user("c")]}) == "c"
    assert question_from({"messages": [{"type": "human", "content": [{"type": "text", "text": "hi"}]}]}) == "hi"
    assert question_from({"messages": [HumanMessage("obj")]}) == "obj"
    assert question_from({"question": "q", "messages": [user("m")]}) == "q"  # question wins
    assert question_from({"question": "  ", "messages": [user("m")]}) == "m"  # a blank question is none
    # a thread's earlier question (answered: history[-1]) is not new: the new human message asks
    assert question_from({"question": "q", "history": [{"question": "q"}], "messages": [user("m")]}) == "m"
    # answered already (the conversation ends with the AI message): the question as given
    assert question_from({"question": "q", "messages": [user("m"), AIMessage("a")]}) == "q"
    assert question_from({"messages": [{"role": "assistant", "content": "a"}]}) is None
    assert question_from({}) is None


# -- a triple graph ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("message", [user(DIRECTED), {"role": "human", "content": DIRECTED},
                                     {"type": "human", "content": DIRECTED}, HumanMessage(DIRECTED)],
                         ids=["role-user", "role-human", "type-human", "object"])
def test_messages_only_on_the_demo_kg(demo_kg_settings, message) -> None:
    state = graph.invoke({"messages": [message], "kg": "demo"})
    assert state["question"] == DIRECTED and state["answers"] == ["Uma Halvorsen"]
    assert kinds(state) == ["human", "ai"]
    last = state["messages"][-1]
    assert isinstance(last, AIMessage) and last.content == state["answer"] and "Uma Halvorsen" in last.content
    assert state["evidence"] and state["trace"][0]["node"] == "extract_keywords"  # the structured fields stay
    assert state["history"] == [{"question": DIRECTED, "topic": state["topic"], "answer": state["answer"]}]


def test_the_kg_from_the_run_context(demo_kg_settings) -> None:
    state = graph.invoke({"messages": [user(DIRECTED)]}, context=AgentContext(kg="demo"))
    assert state["kg"] == "demo" and state["answers"] == ["Uma Halvorsen"] and kinds(state) == ["human", "ai"]


def test_question_wins_over_messages(demo_kg_settings) -> None:
    state = graph.invoke({"question": DIRECTED, "messages": [user(SPOUSE)], "kg": "demo"})
    assert state["question"] == DIRECTED and state["answers"] == ["Uma Halvorsen"]
    # the conversation says what was answered: the question joins it as a human message
    assert [(m.type, m.content) for m in state["messages"][:2]] == [("human", SPOUSE), ("human", DIRECTED)]
    assert state["messages"][-1].content == state["answer"]


def test_a_question_input_still_works_and_joins_the_conversation(demo_kg_settings) -> None:
    state = graph.invoke({"question": DIRECTED, "kg": "demo"})
    assert state["answers"] == ["Uma Halvorsen"] and state["question"] == DIRECTED
    assert [(m.type, m.content) for m in state["messages"]] == [("human", DIRECTED), ("ai", state["answer"])]


@pytest.mark.parametrize("given", [{"messages": []}, {"messages": [user("   ")]}, {},
                                   {"messages": [{"role": "assistant", "content": "hello"}]}],
                         ids=["no-messages", "blank", "nothing", "no-human-message"])
def test_no_question_is_refused_saying_why(demo_kg_settings, given: dict) -> None:
    state = graph.invoke({**given, "kg": "demo"})
    assert state["done"] and "the question is empty" in state["answer"]
    assert state["errors"] == ["the question is empty"]
    assert [t["node"] for t in state["trace"]] == ["extract_keywords", "answer"]
    assert state["messages"][-1].type == "ai" and "the question is empty" in state["messages"][-1].content


def test_a_follow_up_with_history(demo_kg_settings) -> None:
    first = graph.invoke({"messages": [user(DIRECTED)], "kg": "demo"})
    follow = graph.invoke({"messages": [*first["messages"], user("when was it released?")], "kg": "demo",
                           "history": first["history"]})
    assert follow["question"] == "when was it released?"
    assert follow["topic"]["name"] == "Carnival Lights" and follow["topic"]["match_type"] == "history"
    assert kinds(follow) == ["human", "ai", "human", "ai"]
    assert [t["question"] for t in follow["history"]] == [DIRECTED, "when was it released?"]


def test_a_thread_of_messages_is_a_conversation(demo_kg_settings) -> None:
    threaded = build_graph().compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "m1"}}
    first = threaded.invoke({"question": DIRECTED, "kg": "demo"}, config)  # today's input first
    follow = threaded.invoke({"messages": [user("when was it released?")]}, config)
    # the thread's old question is not new: the new human message is the turn's question
    assert follow["question"] == "when was it released?" and follow["session_id"] == first["session_id"]
    assert follow["topic"]["name"] == "Carnival Lights" and follow["topic"]["match_type"] == "history"
    again = threaded.invoke({"question": "who starred in it?"}, config)
    assert again["question"] == "who starred in it?" and again["topic"]["name"] == "Carnival Lights"
    assert kinds(again) == ["human", "ai"] * 3
    assert [m.content for m in again["messages"] if m.type == "human"] == [DIRECTED, "when was it released?",
                                                                           "who starred in it?"]


def test_the_state_as_json(demo_kg_settings) -> None:
    state = graph.invoke({"messages": [user(DIRECTED)], "kg": "demo"})
    plain = json.loads(json.dumps(plain_state(state)))
    assert [(m["type"], m["content"]) for m in plain["messages"]] == [("human", DIRECTED), ("ai", state["answer"])]
    res = CliRunner().invoke(app, ["ask", DIRECTED, "--kg", "demo", "--json"])
    assert res.exit_code == 0, res.output
    printed = json.loads(res.output)
    assert printed["answers"] == ["Uma Halvorsen"] and printed["messages"][-1]["type"] == "ai"


# -- a knowledge network -------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def demo_kn_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('messages-kn') / 'kn.db'}"
    store = NetworkStore(url)
    try:
        store.load(*demo_network())
    finally:
        store.close()
    return url


@pytest.fixture
def demo_kn(demo_kn_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The agent on the demo knowledge network (the demo KG's facts as a network), no trained ranker, no LLM."""
    monkeypatch.setenv("KGRAG_DATABASE_URL", demo_kn_url)
    monkeypatch.setenv("KGRAG_WORK_DIR", str(tmp_path / "work"))
    monkeypatch.setenv("KGRAG_DATA_DIR", str(tmp_path / "no-data"))
    monkeypatch.setenv("KGRAG_LLM_BASE_URL", "")
    monkeypatch.delenv("KGRAG_AGENT_INTENT", raising=False)
    get_settings.cache_clear()
    yield "demo"
    get_settings.cache_clear()


def test_messages_only_on_a_knowledge_network(demo_kn: str) -> None:
    state = graph.invoke({"messages": [user(DIRECTED)]}, context=AgentContext(kn_id=demo_kn))
    assert state["kn_id"] == "demo" and state["question"] == DIRECTED and state["answers"] == ["Uma Halvorsen"]
    assert kinds(state) == ["human", "ai"] and state["messages"][-1].content == state["answer"]
    assert state["evidence"]


def test_a_knowledge_network_thread_of_messages(demo_kn: str) -> None:
    threaded = build_graph().compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "kn1"}}
    threaded.invoke({"messages": [user(DIRECTED)], "kn_id": demo_kn}, config)
    follow = threaded.invoke({"messages": [user("when was it released?")]}, config)
    assert follow["topic"]["name"] == "Carnival Lights" and follow["answers"] == ["2005"]
    assert kinds(follow) == ["human", "ai", "human", "ai"] and "2005" in follow["messages"][-1].content
    empty = threaded.invoke({"messages": [user("")]}, config)
    assert "the question is empty" in empty["answer"] and empty["messages"][-1].type == "ai"

"""The agent graph in-process on the real medical network: each router branch, bad input ending in a state that
says why, a follow-up in a thread, and the LLM tool loop with its fallbacks over the scripted server."""

from __future__ import annotations

import json

import pytest
from fixtures.llm_server import Delay, Error, Reply, use_llm_server

from graphs.agent.context import AgentContext
from graphs.agent.graph import after_keywords, after_plan, graph
from kgrag.agent.turn.messages import plain_state
from kgrag.config import get_settings

SYMPTOMS = "上气道梗阻有哪些症状"


def ask(question: str, **context) -> dict:
    return graph.invoke({"question": question, "kn_id": context.pop("kn_id", "medical")},
                        context=AgentContext(**context))


def test_routers() -> None:
    assert after_keywords({"done": True}) == "answer"
    assert after_keywords({"done": False}) == "schema_recall"
    assert after_plan({"pending": [{"name": "kn_search"}]}) == "tools"
    assert after_plan({"pending": []}) == "answer"


def test_answers_with_stored_values_and_evidence(medical_settings) -> None:
    state = ask(SYMPTOMS)
    assert [t["node"] for t in state["trace"]] == ["extract_keywords", "schema_recall", "contextual_recall", "plan",
                                                   "tools", "plan", "answer"]
    assert state["topic"]["name"] == "上气道梗阻" and state["topic"]["match_type"] == "exact"
    assert "呼吸困难" in state["answers"]
    assert all(row["instance"] == "Disease:上气道梗阻" for row in state["evidence"])
    assert state["tool_calls"][0]["name"] == "query_instance_subgraph" and not state["errors"]
    json.dumps(plain_state(state))  # the whole state is JSON (its messages as dicts)


@pytest.mark.parametrize(("question", "kn_id", "says"), [
    ("", "medical", "empty"), ("   ", "medical", "empty"), ("病" * 10_000, "medical", "10000 characters"),
    (SYMPTOMS, "no_such_kn", "unknown knowledge network 'no_such_kn'"),
])
def test_bad_input_ends_in_a_state_that_says_why(medical_settings, question: str, kn_id: str, says: str) -> None:
    state = ask(question, kn_id=kn_id)
    assert state["done"] and says in state["answer"] and says in state["errors"][0]
    assert [t["node"] for t in state["trace"]] == ["extract_keywords", "answer"]


def test_hostile_question_is_only_data(medical_settings) -> None:
    state = ask("上气道梗阻' OR 1=1; DROP TABLE kn_instances; -- 有哪些症状")
    assert state["topic"]["name"] == "上气道梗阻" and "呼吸困难" in state["answers"]
    assert ask(SYMPTOMS)["answers"]  # the network is intact


def test_a_question_without_a_known_instance_says_so(medical_settings) -> None:
    state = ask("zzqx 有哪些症状")
    assert not state["answers"] and "could not link" in state["answer"]


def test_follow_up_in_a_thread_resolves_to_the_previous_topic(medical_settings) -> None:
    first = ask("百日咳吃什么药")
    assert first["topic"]["name"] == "百日咳"
    follow = graph.invoke({"question": "它有哪些症状", "kn_id": "medical", "history": first["history"]})
    assert follow["topic"]["name"] == "百日咳" and follow["topic"]["match_type"] == "history"
    assert "痉挛性咳嗽" in follow["answers"] and len(follow["history"]) == 2


def test_tool_budget_bounds_the_loop(medical_settings) -> None:
    state = ask("zzqx 有哪些症状", max_tool_calls=1)
    assert len(state["tool_calls"]) <= 1


# -- the LLM path ------------------------------------------------------------------------------------------------

KEYWORDS = json.dumps({"entities": [{"text": "百日咳", "confidence": 0.9}], "attribute_values": [],
                       "relation_words": [{"text": "治疗", "confidence": 0.8}]}, ensure_ascii=False)
CURE = {"object_type": "Disease", "condition": {"operation": "==", "field": "name", "value": "百日咳"},
        "properties": ["name", "cure_way"], "limit": 1}


@pytest.fixture
def llm_env(medical_settings, llm_server, monkeypatch):
    use_llm_server(llm_server, monkeypatch, retries=1)
    yield llm_server
    get_settings.cache_clear()


def scripted(server, *tool_steps):
    """Keyword-extraction requests (no ``tools``) get the keywords; tool-calling requests the steps in order."""
    steps = list(tool_steps)
    server.script(*[lambda body: KEYWORDS if "tools" not in body else steps.pop(0)] * 20)


def test_llm_multi_turn_tool_calling_with_a_malformed_call(llm_env) -> None:
    scripted(llm_env,
             Reply("", tool_calls=[{"name": "query_object_instance", "arguments": CURE}]),
             Reply("", tool_calls=[{"name": "query_instance_subgraph", "arguments": "{not json"}]),
             Reply("百日咳的治疗方式：药物治疗、支持性治疗。"))
    state = ask("百日咳怎么治疗")
    assert state["planner"] == "llm" and not state["errors"]
    calls = state["tool_calls"]
    assert [c["name"] for c in calls] == ["query_object_instance", "query_instance_subgraph"]
    assert calls[0]["result"]["count"] == 1 and "must be a JSON object" in calls[1]["error"]
    assert state["answer"].startswith("百日咳的治疗方式") and "Disease:百日咳" in state["answer"]
    tool_requests = [r.body for r in llm_env.chat_requests if "tools" in r.body]
    assert len(tool_requests) == 3
    last = tool_requests[-1]["messages"]
    assert [m["role"] for m in last][-4:] == ["assistant", "tool", "assistant", "tool"]
    assert "must be a JSON object" in last[-1]["content"]
    assert {t["function"]["name"] for t in tool_requests[0]["tools"]} >= {"query_object_instance", "kn_search"}


@pytest.mark.parametrize("failure", [Error(500, "upstream down"), Delay(3.0)])
def test_llm_failure_falls_back_to_the_llm_free_plan(llm_env, failure) -> None:
    scripted(llm_env, failure, failure, failure)
    state = ask("百日咳怎么治疗")
    assert state["planner"] == "rules" and state["topic"]["name"] == "百日咳" and state["answers"]
    assert any("LLM planner failed" in e and "LLM-free plan was used" in e for e in state["errors"])
    plan = next(t for t in state["trace"] if t["node"] == "plan")
    assert "LLM failed" in plan["summary"]


def test_llm_calls_beyond_the_budget_are_refused(llm_env) -> None:
    scripted(llm_env, Reply("", tool_calls=[{"name": "query_object_instance", "arguments": CURE}] * 3),
             Reply("done"))
    state = ask("百日咳怎么治疗", max_tool_calls=2)
    assert len(state["tool_calls"]) == 2
    tool_msgs = [m for m in state["llm_messages"] if m["role"] == "tool"]
    assert len(tool_msgs) == 3 and "budget" in tool_msgs[-1]["content"]


# -- the trained ranker in the graph ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ranker_work(medical_db: str, tmp_path_factory) -> str:
    """A work dir holding an intent ranker trained on 3,000 CE-Prompt questions (a small, fast budget)."""
    from kgrag.agent.training.train_intent import train_intent
    from kgrag.config import Settings

    work = tmp_path_factory.mktemp("ranker-work")
    train_intent(Settings(work_dir=work, database_url=medical_db), {"max_train_questions": 3000}, log=lambda _: None)
    return str(work)


def test_trained_ranker_plans_properties_and_inbound_relations(medical_settings, ranker_work, monkeypatch) -> None:
    monkeypatch.setenv("KGRAG_WORK_DIR", ranker_work)
    get_settings.cache_clear()
    prop = ask("哪些人容易得百日咳")
    assert prop["schema"]["ranker"] == "labelled" and prop["tool_calls"][0]["label"] == "prop:easy_get"
    assert prop["answers"] and prop["evidence"][0]["via"] == "easy_get"
    inbound = ask("尿不尽是什么病引起的")
    assert inbound["tool_calls"][0]["label"] == "rel_in:has_symptom"
    assert inbound["topic"] == {**inbound["topic"], "name": "尿不尽", "object_type": "Symptom"}
    assert "尿路感染" in inbound["answers"] and all(r["instance"] == "Symptom:尿不尽" for r in inbound["evidence"])

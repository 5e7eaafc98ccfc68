"""The GFlowNet reasoner's LLM answering step, over real HTTP against the scripted server."""

from __future__ import annotations

import json

import pytest
from fixtures.llm_server import Reply

from kgrag.config import Settings
from kgrag.hrag.gflownet.llm_answer import (
    PathEvidence,
    answer_correct,
    build_messages,
    llm_answers,
    normalise_name,
    verbalise_path,
)
from kgrag.llm.client import ChatClient

KILL_BILL = ("Kill Bill", "directed_by", "Quentin Tarantino")
FORWARD = PathEvidence((KILL_BILL, ("Quentin Tarantino", "born_in", "Knoxville")), "Knoxville", 0.6)
# "Which films did Uma Thurman star in?" walks (film, starred_actors, actor) against its direction.
BACKWARD = PathEvidence((("Kill Bill", "starred_actors", "Uma Thurman"),), "Kill Bill", 0.3)
MIXED = PathEvidence(((KILL_BILL[2], "born_in", "Knoxville"), KILL_BILL), "Kill Bill", 0.1)


@pytest.fixture
def client(llm_settings: Settings):
    with ChatClient.from_settings(llm_settings, backoff_base=0.01, backoff_max=0.05) as c:
        yield c


def test_verbalise_forward_and_backward_walks():
    assert verbalise_path(FORWARD) == "Kill Bill -[directed_by]-> Quentin Tarantino -[born_in]-> Knoxville"
    assert verbalise_path(BACKWARD) == "Uma Thurman <-[starred_actors]- Kill Bill"
    assert verbalise_path(PathEvidence((KILL_BILL,), "Quentin Tarantino", 1.0)) == (
        "Kill Bill -[directed_by]-> Quentin Tarantino"
    )
    assert verbalise_path(MIXED) == "Knoxville <-[born_in]- Quentin Tarantino <-[directed_by]- Kill Bill"


def test_verbalise_rejects_broken_paths():
    with pytest.raises(ValueError):
        verbalise_path(PathEvidence((KILL_BILL, ("Pulp Fiction", "genre", "Crime")), "Crime", 1.0))
    with pytest.raises(ValueError):
        verbalise_path(PathEvidence((), "X", 1.0))


@pytest.mark.parametrize(
    ("predicted", "gold", "expected"),
    [
        (["Quentin Tarantino"], ["quentin  tarantino"], True),
        (['"Quentin Tarantino."'], ["Quentin Tarantino"], True),
        (["Uma Thurman", "Kill Bill"], ["kill bill"], True),
        (["Quentin"], ["Quentin Tarantino"], False),
        ([], ["Kill Bill"], False),
        (["", "  "], ["", "?"], False),
    ],
)
def test_answer_correct(predicted, gold, expected):
    assert answer_correct(predicted, gold) is expected


def test_normalise_name():
    assert normalise_name("  “Kill   Bill: Vol. 1”  ") == "kill bill: vol. 1"


def test_build_messages_keeps_best_paths_in_order():
    (message,) = build_messages("Where was the director of Kill Bill born?", [MIXED, BACKWARD, FORWARD], 2)
    content = message["content"]
    assert message["role"] == "user"
    assert f"1. {verbalise_path(FORWARD)}\n2. {verbalise_path(BACKWARD)}" in content
    assert verbalise_path(MIXED) not in content and "3. " not in content
    assert '{"answers": [' in content  # the template's doubled braces came out single


@pytest.mark.parametrize(
    "reply",
    [
        json.dumps({"answers": ["Knoxville", " Knoxville ", "Kill Bill"]}),
        'Sure! Path 1 shows it.\n```json\n{"answers": ["Knoxville", "Kill Bill"]}\n```\nHope that helps.',
    ],
)
def test_llm_answers_over_http(client, llm_server, reply):
    llm_server.script(Reply(reply))
    question = "Where was the director of Kill Bill born?"
    assert llm_answers(client, question, [BACKWARD, FORWARD]) == ["Knoxville", "Kill Bill"]

    (request,) = llm_server.chat_requests
    prompt = "\n".join(m["content"] for m in request.messages)
    assert question in prompt
    assert f"1. {verbalise_path(FORWARD)}" in prompt and f"2. {verbalise_path(BACKWARD)}" in prompt


def test_llm_answers_empty_list_when_paths_do_not_answer(client, llm_server):
    llm_server.script(Reply('{"answers": []}'))
    assert llm_answers(client, "Who composed the score?", [FORWARD]) == []


def test_no_paths_means_no_llm_call(client, llm_server):
    assert llm_answers(client, "Who directed Kill Bill?", []) == []
    assert llm_server.requests == []

"""The agent's conversation in LangGraph's messages convention (the state's ``messages``, what chat clients, the
SDK's ``RemoteGraph`` and ``useStream`` UIs speak): which question a turn answers, and the messages it adds.

    graph.invoke({"messages": [{"role": "user", "content": "who directed Carnival Lights?"}], "kg": "demo"})

- the question of a turn (:func:`question_from`): ``question`` when the run gives a new one (it wins over
  messages), else the last message when it is a human one and not answered yet, else ``question`` as it is
  (empty: the turn is refused, saying why);
- :func:`question_update`: what the first node records of it — ``question`` (a question taken from a message, so
  every later node, ``history`` and the trace read one field) and, for a question given as ``question``, the
  human message that asks it (the conversation stays whole);
- :func:`answer_message`: the AI message the answer node appends;
- :func:`plain_state`: the final state with its messages as dicts (``kgrag ask --json``, MCP, benchmarks).

A ``question`` left in a thread's state by an earlier turn (the LangGraph server keeps a thread's state between
runs) is not new: it is the question the thread's last turn answered (``history[-1]``); a new human message then
asks the turn's question.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, convert_to_messages

__all__ = ["answer_message", "pending_question", "plain_state", "question_from", "question_update"]


def _as_messages(messages: Sequence[Any] | None) -> list[BaseMessage]:
    """LangChain messages (dicts such as ``{"role": "user", "content": …}`` converted; the reducer has usually done
    it already)."""
    return convert_to_messages(list(messages or []))


def pending_question(messages: Sequence[Any] | None) -> str | None:
    """The text of the conversation's last message when it is a human one (not answered yet), else None."""
    converted = _as_messages(messages)
    if not converted or not isinstance(converted[-1], HumanMessage):
        return None
    return str(converted[-1].text)


def _answered(state: Mapping[str, Any], question: str) -> bool:
    history = state.get("history") or []
    return bool(history) and history[-1].get("question") == question


def question_from(state: Mapping[str, Any]) -> Any:
    """The question of this turn: ``question`` when it is new (it wins over messages), else the pending human
    message's text, else ``question`` as given (None, empty, not text: :func:`~kgrag.agent.turn.node.question_problem`
    says why)."""
    question = state.get("question")
    asked = pending_question(state.get("messages"))
    if asked is None:
        return question
    if isinstance(question, str) and question.strip() and not _answered(state, question):
        return question
    return asked


def question_update(state: Mapping[str, Any], question: Any, accepted: bool) -> dict[str, Any]:
    """What the turn's first node records of its ``question``: the field when it differs from the state's, and the
    human message asking it when the conversation does not end with it already (only for an ``accepted`` one:
    a refused question is only said in the answer)."""
    update: dict[str, Any] = {}
    if isinstance(question, str) and question != state.get("question"):
        update["question"] = question
    if accepted and pending_question(state.get("messages")) != question:
        update["messages"] = [HumanMessage(content=question)]
    return update


def answer_message(answer: str) -> AIMessage:
    """The AI message that carries a turn's answer sentence."""
    return AIMessage(content=answer)


def plain_state(state: Mapping[str, Any]) -> dict[str, Any]:
    """The state with its ``messages`` as JSON dicts (LangChain's form, as the LangGraph server returns them)."""
    plain = dict(state)
    if "messages" in plain:
        plain["messages"] = [m.model_dump(mode="json") if isinstance(m, BaseMessage) else m
                             for m in plain["messages"]]
    return plain

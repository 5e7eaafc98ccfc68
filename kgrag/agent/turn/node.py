"""The node contract both agents share (the knowledge network's :mod:`kgrag.agent.kn.steps` and the triple graph's
:mod:`kgrag.agent.kg.steps`): what a step receives, how it is timed into the trace, how a turn stops or falls
back from the LLM planner, and why a question is refused.

    run = AgentRun(AgentSettings(kn_id="medical"), resources_for(get_settings()))
    update = kn.steps.extract_keywords({"question": "百日咳有哪些症状"}, run)   # a @traced step: update + trace

A step is ``fn(state, run) -> (update, summary)``; :func:`traced` turns it into ``step(state, run) -> update``
whose ``trace`` holds its one new entry (the state's ``trace`` reducer appends it, :mod:`kgrag.agent.turn.state`).
Updates carry only the *new* ``errors`` of the step, for the same reason.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from kgrag.agent.turn.state import AgentSettings, AgentState

__all__ = ["HISTORY_TURNS", "AgentRun", "StepBody", "TracedStep", "Update", "failure_answer", "planned",
           "question_problem", "stop", "tool_arguments", "traced"]

#: turns a thread keeps in ``history``
HISTORY_TURNS = 20
Update = dict[str, Any]
#: what a run's steps need of the shared resources: a Protocol of each kind (the knowledge network's
#: ``kgrag.agent.kn.needs.NetworkNeeds``, the triple graph's ``kgrag.agent.kg.needs.TripleNeeds``)
ResourcesT = TypeVar("ResourcesT", covariant=True)


@dataclass
class AgentRun(Generic[ResourcesT]):
    """One run's settings and the shared resources it works with (``kgrag.agent.resources.Resources`` serves
    both kinds)."""

    settings: AgentSettings
    resources: ResourcesT


#: a step as written: ``fn(state, run) -> (update, summary)``
StepBody = Callable[[AgentState, AgentRun[Any]], tuple[Update, str]]
#: a step as the graph runs it: ``step(state, run) -> update`` (its trace entry included)
TracedStep = Callable[[AgentState, AgentRun[Any]], Update]


def traced(node: str) -> Callable[[StepBody], TracedStep]:
    """Time a step and add its ``{"node", "ms", "summary"}`` entry to the update's ``trace``."""

    def wrap(fn: StepBody) -> TracedStep:
        def step(state: AgentState, run: AgentRun[Any]) -> Update:
            started = time.perf_counter()
            update, summary = fn(state, run)
            entry = {"node": node, "ms": round((time.perf_counter() - started) * 1000, 2), "summary": summary}
            return {**update, "trace": [*update.get("trace", []), entry]}

        step.__name__ = fn.__name__
        step.__doc__ = fn.__doc__
        return step

    return wrap


def question_problem(question: object, settings: AgentSettings) -> str | None:
    """Why a turn's question is refused (empty, too long, not valid Unicode text), or None."""
    if not isinstance(question, str) or not question.strip():
        return "the question is empty"
    if len(question) > settings.max_question_chars:
        return (f"the question has {len(question)} characters; at most {settings.max_question_chars} are "
                "accepted")
    try:  # a lone surrogate (JSON allows "\ud800") is no character: the searches would fail on it
        question.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"the question is not valid Unicode text (a lone surrogate at character {exc.start})"
    return None


def planned(state: AgentState, run: AgentRun[Any], llm_plan: Callable[..., tuple[Update, str, str | None]],
            rules_plan: StepBody) -> tuple[Update, str]:
    """The LLM's plan when the turn uses one and it answers; else (or when it fails, said in ``errors`` and the
    summary) the LLM-free plan."""
    if state.get("planner") != "llm":
        return rules_plan(state, run)
    update, summary, failure = llm_plan(state, run)
    if failure is None:
        return update, summary
    error = f"LLM planner failed ({failure}); the LLM-free plan was used"
    rules, rules_summary = rules_plan(state, run)
    errors = [error, *rules.get("errors", [])]
    return {**rules, "planner": "rules", "errors": errors}, f"LLM failed ({failure}) -> rules: {rules_summary}"


def stop(update: Update, error: str) -> tuple[Update, str]:
    """End the turn with ``error`` (the answer node then says why)."""
    update["errors"] = [*update.get("errors", []), error]
    update["done"] = True
    return update, error


def failure_answer(errors: Sequence[str]) -> str:
    """The answer of a turn that could not run: what went wrong, in the state's words."""
    return "I could not answer: " + "; ".join(errors) if errors else "I could not answer this question."


def tool_arguments(raw: Any) -> Any:
    """A tool call's arguments: a dict as is, JSON text decoded, anything else passed on (the tool says why)."""
    if isinstance(raw, dict):
        return raw
    try:
        return json.loads(raw)
    except (TypeError, ValueError):
        return raw  # the tool reports "arguments must be a JSON object" to the model

"""The online agent's state and run settings: plain JSON-able data, so a LangGraph checkpointer, the LangGraph API
and ``kgrag ask --json`` all carry it as it is — except ``messages``, the conversation in LangGraph's messages
convention (LangChain messages under the ``add_messages`` reducer: the server serialises them, in-process callers
get them as dicts from :func:`kgrag.agent.turn.messages.plain_state`). Stores, rankers and clients are held outside (by
id, see :mod:`kgrag.agent.resources`), never in the state.

    AgentSettings(kn_id="medical", max_tool_calls=4).fingerprint()

A run works on a knowledge network (``kn_id``) or, when ``kg`` is given, on a triple graph behind SPARQL
(:mod:`kgrag.agent.kg.steps`); the nodes are the same. One turn fills, node by node: ``keywords`` → ``schema`` → ``context`` (+ ``topic``) → ``tool_calls`` (planned in
``plan``, run by ``tools``) → ``answer`` / ``answers`` / ``evidence``. ``trace`` has one entry per node run (its
name, milliseconds and a short summary); ``errors`` says what went wrong, in words. A thread keeps ``history``
(question, topic, answer per turn): a follow-up without a topic of its own resolves to the previous one.

A run's question is ``question``, or else the last human message of ``messages`` (:mod:`kgrag.agent.turn.messages`);
the turn ends with its answer appended to ``messages`` as an AI message. ``llm_messages`` is something else: the
LLM planner's own conversation of one turn (system prompt, tool results), reset every turn.
"""

from __future__ import annotations

import copy
import hashlib
from typing import Annotated, Any, Literal, TypedDict

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from pydantic import BaseModel, ConfigDict, Field

__all__ = ["NEW_TURN", "AgentSettings", "AgentState", "TURN_FIELDS", "ToolCall", "TraceEntry", "accumulate",
           "fresh_turn", "kind_of"]

#: the first item of a ``trace`` / ``errors`` update that starts a turn: the reducer drops what came before
NEW_TURN = "__new_turn__"


def accumulate(left: list[Any] | None, right: list[Any] | None) -> list[Any]:
    """The reducer of the fields a turn accumulates (``trace``, ``errors``): a node's update is appended; an update
    that starts with :data:`NEW_TURN` (the first node of a turn, :func:`fresh_turn`) replaces the field."""
    new = list(right or [])
    if new and new[0] == NEW_TURN:
        return new[1:]
    return [*(left or []), *new]


class TraceEntry(TypedDict):
    node: str
    ms: float
    summary: str


class ToolCall(TypedDict, total=False):
    id: str
    name: str
    args: dict[str, Any]
    why: str  # what the planner meant by it (intent and probability, or "llm")
    label: str  # the intent it plans (the LLM-free planner)
    result: Any  # the tool's JSON result (None when it failed)
    error: str  # why it failed (an invalid argument, an unknown type …)
    ms: float


class AgentState(TypedDict, total=False):
    # input
    question: str
    #: the conversation (LangGraph's messages convention): a run's last human message is its question when it gives
    #: no ``question``; each turn appends its answer as an AI message
    messages: Annotated[list[AnyMessage], add_messages]
    kn_id: str
    kg: str  # a triple graph behind SPARQL (metaqa, demo, freebase …): the triple kind of the loop
    session_id: str  # the thread's KG session (held by id in kgrag.agent.kg.triple_kg, never in the state)
    # one turn
    keywords: list[dict[str, Any]]
    schema: dict[str, Any]
    context: dict[str, Any]
    topic: dict[str, Any] | None
    pending: list[ToolCall]
    tool_calls: list[ToolCall]
    evidence: list[dict[str, Any]]
    answers: list[str]
    ranked: list[dict[str, Any]]  # the triple kind: ranked answers with scores (best first)
    #: the query graph the turn executed (kgrag.query_graph.plan.QueryGraph as JSON), None when none was planned
    query_graph: dict[str, Any] | None
    #: the next-best query graphs the planner scored (kept for the trace), best first
    query_graph_candidates: list[dict[str, Any]]
    #: the query plan over the network's rows the turn executed (kgrag.agent.kn.table_plans), None when none
    table_plan: dict[str, Any] | None
    #: another planner's answer set checked against the plan over rows (kgrag.agent.turn.row_plans.cross_check):
    #: ``{"describe", "confidence", "agree"}``, None when not checked
    cross_check: dict[str, Any] | None
    #: how sure the answer is, in [0, 1]; below AgentSettings.min_confidence the agent abstains
    confidence: float
    #: the parts of the question the answer did not use, in the question's words ("before 1900")
    unused: list[str]
    #: the answer values held back because ``confidence`` was below AgentSettings.min_confidence (the best guess)
    withheld: list[str]
    answer: str
    planner: Literal["rules", "llm"]
    llm_messages: list[dict[str, Any]]  # the LLM planner's conversation of this turn (the LLM path only)
    usage: dict[str, int]  # the LLM path: calls and tokens of this turn
    done: bool
    errors: Annotated[list[str], accumulate]  # a node returns only its new errors
    trace: Annotated[list[TraceEntry], accumulate]  # a node returns only its own entry
    # the thread
    history: list[dict[str, Any]]


#: the fields one turn (re)sets; ``history`` and the inputs survive between turns of a thread
TURN_FIELDS: dict[str, Any] = {
    "keywords": [], "schema": {}, "context": {}, "topic": None, "pending": [], "tool_calls": [], "evidence": [],
    "answers": [], "ranked": [], "query_graph": None, "query_graph_candidates": [], "table_plan": None, "cross_check": None, "confidence": 0.0, "unused": [],
    "withheld": [],
    "answer": "", "planner": "rules", "llm_messages": [], "usage": {}, "done": False,
    "errors": [NEW_TURN], "trace": [NEW_TURN],
}


def kind_of(state: AgentState, settings: AgentSettings) -> Literal["kn", "kg"]:
    """Which kind of KG a run works on: a triple graph when the state (or the run's settings) names ``kg``."""
    return "kg" if state.get("kg") or settings.kg else "kn"


def fresh_turn() -> dict[str, Any]:
    """Empty values for every per-turn field (new lists: the caller may append); ``trace`` and ``errors`` start
    with :data:`NEW_TURN`, so the turn's first update replaces them instead of appending."""
    return copy.deepcopy(TURN_FIELDS)


class AgentSettings(BaseModel):
    """Run settings of one agent run (the LangGraph run context); defaults from :class:`kgrag.config.Settings`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kn_id: str = Field(default="medical", min_length=1, max_length=200)
    #: a triple graph (built-in or registered: kgrag.data.registry): when set, the run works on it instead of a network
    kg: str | None = Field(default=None, min_length=1, max_length=200)
    #: how the model calls tools on a triple graph: the spec's <kg-query> text protocol, or OpenAI tool calls
    llm_style: Literal["kg-query", "tools"] = "kg-query"
    max_tool_calls: int = Field(default=4, ge=1, le=16)
    use_llm: bool = False
    max_question_chars: int = Field(default=2000, ge=16, le=100_000)
    #: the most answer values listed in ``answer`` (``answers`` keeps them all)
    max_listed: int = Field(default=30, ge=1, le=1000)
    #: plan a query graph for each question (counts, filters, superlatives, several hops, answer types); False:
    #: the one-relation planners alone (the topic's best relation or chain)
    query_graphs: bool = True
    #: English questions on a network: plan over the network's rows first (kgrag.agent.kn.table_plans; the
    #: learned plan scorer when trained) — the other planners answer what it is not sure of
    table_plans: bool = True
    #: answers below this confidence are withheld ("I am not sure …"); 0 answers everything; None (the default):
    #: the calibrated threshold of the plan scorer for the answers whose confidence is calibrated (query plans:
    #: right ≥ 90 % of the time on its validation databases), 0 for the others (KGRAG_AGENT_MIN_CONFIDENCE)
    min_confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    #: the networks / KGs the caller's key may read (None: all): any other is answered as one that does not exist
    readable_kns: tuple[str, ...] | None = None
    readable_kgs: tuple[str, ...] | None = None

    def fingerprint(self) -> str:
        unscoped = {k for k in ("readable_kns", "readable_kgs") if getattr(self, k) is None}
        return hashlib.sha1(self.model_dump_json(exclude=unscoped).encode()).hexdigest()[:12]

    def may_read_kn(self, kn_id: str) -> bool:
        return self.readable_kns is None or kn_id in self.readable_kns

    def may_read_kg(self, kg: str) -> bool:
        return self.readable_kgs is None or kg in self.readable_kgs

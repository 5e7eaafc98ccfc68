"""A query plan over rows on either graph kind, for callers outside the agent's turn — the HTTP route
``POST /api/agent-retrieval/in/v1/kn/query_plan`` and the MCP tool ``query_plan``: plan a question (the scorer's best
:class:`~kgrag.reading.table_plan.TablePlan`, its calibrated confidence, the words it did not link, the next
readings) or run a plan the caller wrote, on a network's rows or a typed KG's classes as tables.

    request = PlanRequest(kn_id="pets_1", question="How many dogs weigh over 10 kg?")
    query_plan(request, plan_view(request, resources))     # or PlanRequest(kg="scientists", plan={…})

Contract: exactly one of ``kn_id`` / ``kg`` and one of ``question`` / ``plan`` (a 400 otherwise, from pydantic);
the result has ``describe``, ``plan``, ``answers`` (at most 500), ``count``, ``rows``, ``evidence`` and, for a
question, ``confidence``, ``scorer``, ``unlinked``, ``min_confidence`` (the calibrated threshold: answers below it
are the agent's "not sure") and ``alternatives``. A network over ``MAX_ROWS`` instances, a KG that types no entity,
an unknown network / KG or a plan naming what the graph does not hold is a ``ValueError`` (``NetworkNotFound`` for
a network) saying which.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from kgrag.agent.kg.table_plans import graph_view
from kgrag.agent.turn.row_plans import calibrated_threshold, plan_result
from kgrag.errors import KgragError
from kgrag.reading.answer import answer_on_view
from kgrag.reading.table_plan import TablePlan
from kgrag.reading.tables import MAX_ROWS, TableView, view_for

if TYPE_CHECKING:  # pragma: no cover
    from kgrag.agent.resources import Resources

__all__ = ["PlanRequest", "network_view", "plan_view", "query_plan"]


class PlanRequest(BaseModel):
    """A question to plan, or a plan to run, on a network (``kn_id``) or a prepared KG (``kg``)."""

    model_config = ConfigDict(extra="forbid")

    kn_id: str | None = Field(default=None, min_length=1, max_length=200)
    kg: str | None = Field(default=None, min_length=1, max_length=200)
    question: str | None = Field(default=None, min_length=1, max_length=2000)
    plan: TablePlan | None = None

    @model_validator(mode="after")
    def _one_each(self) -> PlanRequest:
        if (self.kn_id is None) == (self.kg is None):
            raise ValueError("give exactly one of kn_id (a network) and kg (a prepared KG)")
        if (self.question is None) == (self.plan is None):
            raise ValueError("give exactly one of question (to plan) and plan (to run)")
        return self


def network_view(store: Any, kn_id: str) -> TableView:
    """The network's rows as tables (``NetworkNotFound`` for an unknown one; ``ValueError`` over ``MAX_ROWS``)."""
    store.get_network(kn_id)
    view = view_for(store, kn_id)
    if view is None:
        raise ValueError(f"network {kn_id!r} has over {MAX_ROWS} instances: plans over rows are not offered on it")
    return view


def plan_view(request: PlanRequest, resources: Resources) -> TableView:
    """The tables the request plans over: its network's rows, or its KG's classes."""
    if request.kn_id is not None:
        return network_view(resources.store, request.kn_id)
    try:
        view = graph_view(resources.triple_kg(str(request.kg)))
    except KgragError as exc:
        raise ValueError(str(exc)) from exc
    if view is None:
        raise ValueError(f"KG {request.kg!r} types no entity (no rdf:type / P31 / type.object.type): no tables to "
                         "plan over")
    return view


def query_plan(request: PlanRequest, view: TableView) -> dict[str, Any]:
    """Plan ``request.question`` or run ``request.plan`` on ``view`` (:func:`plan_view`; see the module docstring)."""
    if request.plan is not None:
        try:
            return {"plan": request.plan.model_dump(mode="json"), **plan_result(request.plan, view)}
        except KgragError as exc:
            raise ValueError(str(exc)) from exc
    found = answer_on_view(str(request.question), view)
    if found is None:
        return {"describe": "", "plan": None, "answers": [], "count": None, "rows": 0, "evidence": [],
                "confidence": 0.0, "unlinked": [], "min_confidence": calibrated_threshold(),
                "reason": "no plan could be built from the question's words over this graph's types"}
    kept = found.to_dict()
    return {**plan_result(found.plan, view), "plan": found.plan.model_dump(mode="json"),
            "confidence": round(found.confidence, 4), "scorer": found.scorer, "unlinked": list(found.unlinked),
            "min_confidence": calibrated_threshold(), "alternatives": kept["alternatives"]}

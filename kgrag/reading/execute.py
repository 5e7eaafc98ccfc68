"""Run a :class:`~kgrag.reading.table_plan.TablePlan` on a :class:`~kgrag.reading.tables.TableView`: vectorised
masks over the answer type's rows, the start type's rows walked along the path, then the projection.

    result = run_plan(plan, view)     # result.answers == ["9.3"]; result.rows: the answer rows used

Contract: text equality compares lower-cased, space-collapsed values (any of ``values``); ``contains`` is a
case-insensitive substring; number filters compare the property as a number (a date property as a sortable
``YYYYMMDD…`` number: a year bound ``< 2005`` reads ``< 2005-01-01``); rows without the value never pass.
Answers are distinct, in row order (for an order: best first), written by :func:`~kgrag.reading.tables.answer_text`;
a count is one answer, the number. ``evidence`` names each answer row (type, id, display name, the projected and
the filtered / ordered values) — what the answer rests on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kgrag.reading.table_plan import Filter, TablePlan
from kgrag.reading.tables import YEAR, TableView, TypeTable, answer_text

__all__ = ["PlanResult", "filter_mask", "run_plan"]

#: evidence rows kept per answer
EVIDENCE = 25


@dataclass
class PlanResult:
    answers: list[str] = field(default_factory=list)
    #: the answer type's rows the answers came from (before projection)
    rows: list[int] = field(default_factory=list)
    count: int | None = None
    evidence: list[dict[str, Any]] = field(default_factory=list)
    #: what made the plan unrunnable (an unknown type / property / relation), else ""
    problem: str = ""


def _date_bound(table: TypeTable, prop: str, number: float) -> float:
    """A year bound on a date-like text property, as the sortable number of that year's first instant."""
    if table.is_numeric(prop) or not (1000 <= number <= 2200 and float(number).is_integer()):
        return number
    return float(int(number) * YEAR)


def filter_mask(table: TypeTable, f: Filter) -> np.ndarray:
    """The rows of ``table`` that meet ``f``."""
    if f.number is not None:
        col = table.numbers(f.property)
        low = _date_bound(table, f.property, f.number)
        with np.errstate(invalid="ignore"):
            if f.op == "between":
                high = _date_bound(table, f.property, f.number2 if f.number2 is not None else f.number)
                if not table.is_numeric(f.property) and high == low:
                    high = low + YEAR
                return (col >= min(low, high)) & (col <= max(low, high))
            if f.op == "=":
                if not table.is_numeric(f.property) and low != f.number:
                    return (col >= low) & (col < low + YEAR)
                return col == low
            return {"<": col < low, "<=": col <= low, ">": col > low, ">=": col >= low}.get(
                f.op, np.zeros(len(table), dtype=bool))
    lower = table.lower(f.property)
    wanted = [v.lower() for v in f.values]
    if f.op == "contains":
        return np.array([any(w in text for w in wanted) for text in lower], dtype=bool)
    index = table.value_index(f.property)
    mask = np.zeros(len(table), dtype=bool)
    for w in wanted:
        mask[index.get(" ".join(w.split()), [])] = True
    return mask


def _problem(plan: TablePlan, view: TableView) -> str:
    if plan.answer_type not in view.types:
        return f"unknown object type {plan.answer_type!r}"
    if plan.start_type and plan.start_type not in view.types:
        return f"unknown object type {plan.start_type!r}"
    for rid, _ in plan.path:
        if rid not in view.links:
            return f"unknown relation type {rid!r}"
    def table_of(on: str) -> str:
        return plan.start_type if on == "start" else plan.answer_type

    for f in plan.filters:
        if not table_of(f.on) or f.property not in view.types[table_of(f.on)].properties:
            return f"no property {f.property!r} to filter on"
    order = plan.order
    if order is not None and (not table_of(order.on) or order.property not in view.types[table_of(order.on)].properties):
        return f"no property {order.property!r} to order by"
    if plan.project and plan.project not in view.types[plan.answer_type].properties:
        return f"no property {plan.project!r} on {plan.answer_type}"
    return ""


def run_plan(plan: TablePlan, view: TableView) -> PlanResult:
    """The plan's answers on ``view`` (see the module docstring)."""
    problem = _problem(plan, view)
    if problem:
        return PlanResult(problem=problem)
    table = view.types[plan.answer_type]
    mask = np.ones(len(table), dtype=bool)
    for f in plan.filters:
        if f.on == "answer":
            mask &= filter_mask(table, f)
    if plan.start_type:
        start = view.types[plan.start_type]
        smask = np.ones(len(start), dtype=bool)
        for f in plan.filters:
            if f.on == "start":
                smask &= filter_mask(start, f)
        order = plan.order
        if order is not None and order.on == "start":
            # the best start rows (by the order value) among those that reach a kept answer row
            values = start.numbers(order.property)
            back = tuple((rid, "in" if d == "out" else "out") for rid, d in reversed(plan.path))
            _, reaches = view.walk(plan.answer_type, mask, back)
            candidates = np.flatnonzero(smask & reaches & ~np.isnan(values))
            if candidates.size == 0:
                return _finish(plan, view, table, [])
            best = values[candidates].max() if order.op == "argmax" else values[candidates].min()
            smask = np.zeros(len(start), dtype=bool)
            smask[candidates[values[candidates] == best]] = True
        reached_type, reached = view.walk(plan.start_type, smask, plan.path)
        if reached_type != plan.answer_type:
            return PlanResult(problem=f"the path ends at {reached_type}, not {plan.answer_type}")
        mask &= reached
    rows = list(np.flatnonzero(mask))
    order = plan.order
    if order is not None and order.on == "answer" and rows:
        values = table.numbers(order.property)[rows]
        keep = ~np.isnan(values)
        if not keep.any():
            return _finish(plan, view, table, [])
        best = np.nanmax(values) if order.op == "argmax" else np.nanmin(values)
        rows = [r for r, v in zip(rows, values, strict=True) if v == best]
    return _finish(plan, view, table, [int(r) for r in rows])


def _finish(plan: TablePlan, view: TableView, table: TypeTable, rows: list[int]) -> PlanResult:
    prop = plan.project or table.type.display_key
    column = table.column(prop) if prop in table.properties or prop == "id" else table.column("id")
    names = table.column(table.type.display_key) if table.type.display_key in table.properties else table.ids
    out = PlanResult(rows=rows)
    if plan.op == "count":
        out.count = len(rows)
        out.answers = [str(len(rows))]
    elif plan.op == "count_distinct":
        distinct = {answer_text(column[r]).lower() for r in rows if column[r] not in (None, "")}
        out.count = len(distinct)
        out.answers = [str(len(distinct))]
    elif plan.op in ("max", "min"):
        numbers = table.numbers(prop)
        kept = [r for r in rows if not math.isnan(numbers[r])]
        if kept:
            pick = max if plan.op == "max" else min
            best = pick(kept, key=lambda r: numbers[r])
            out.answers = [answer_text(column[best])]
            out.rows = [r for r in kept if numbers[r] == numbers[best]]
    else:
        out.answers = list(dict.fromkeys(answer_text(column[r]) for r in rows if column[r] not in (None, "")))
    shown = [f.property for f in plan.filters if f.on == "answer"]
    if plan.order is not None and plan.order.on == "answer":
        shown.append(plan.order.property)
    for r in out.rows[:EVIDENCE]:
        row = {"object_type": plan.answer_type, "id": table.ids[r], "name": answer_text(names[r])
               if names[r] is not None else table.ids[r]}
        if plan.project:
            row[plan.project] = column[r]
        for p in shown:
            row[p] = table.column(p)[r]
        out.evidence.append(row)
    return out

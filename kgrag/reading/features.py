"""Features of one (question, candidate plan) pair — what the learned plan scorer and the rules fallback read.

    rows = plan_features(found, results, view)     # one dict per plan of ``found`` (same order)

Contract: every feature is a float from the question reader (:mod:`kgrag.reading.reader`), the two linkers
(:mod:`kgrag.reading.linking`) and the plan's execution (:mod:`kgrag.reading.execute`) — no feature names a
database, a type or a property, so a scorer trained on some networks reads any other. :data:`FEATURES` fixes
their order (the model's columns).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from kgrag.reading.candidates import Candidates, count_cue, head_words, phrase_fit, prop_fit, type_fit
from kgrag.reading.execute import PlanResult
from kgrag.reading.linking import element_words, explained, similar, words_near
from kgrag.reading.table_plan import TablePlan
from kgrag.reading.tables import TableView

__all__ = ["FEATURES", "as_matrix", "plan_features", "plan_words"]

_WH = ("how many", "what", "which", "who", "where", "when", "list", "find", "show", "give", "name", "how much",
       "how old", "")
_DATE_WORDS = frozenset({"year", "date", "time", "day", "born", "birth", "founded", "start", "end", "open"})
_DISTINCT = re.compile(r"\b(different|distinct|unique)\b", re.I)

FEATURES: tuple[str, ...] = (
    "t_fit", "t_head", "t_rank", "proj_display", "proj_fit", "proj_head", "proj_numeric",
    "n_filters", "n_value", "n_number", "n_contains", "n_or", "n_start_filters", "atoms", "atoms_unused",
    "atoms_unused_value", "atoms_unused_number", "value_min_tokens", "value_named", "value_rows_frac",
    "value_prop_fit", "value_on_display", "number_fit_min", "number_fit_max", "year_on_date",
    "join", "path_len", "s_fit", "s_head",
    "count_cue", "op_count", "op_count_distinct", "distinct_word", "op_maxmin", "extreme_cue", "order",
    "order_on_start", "order_fit", "degree_dir", "order_sign", "dir_agree", "dir_agree_date", "order_date",
    "n_answers_log", "empty", "all_rows", "single_answer", "count_value_log", "answer_rows_frac",
    "coverage", "unexplained", "q_len", "n_quantities", "n_quoted",
    "t_phrase", "s_phrase", "proj_phrase", "proj_filtered", "order_near", "proj_phrase_best",
    "proj_text_len", "proj_unique", "head_plural", "plural_many", "proj_id_like", "head_is_type",
) + tuple(f"wh_{w.replace(' ', '_') or 'none'}" for w in _WH)


def plan_words(plan: TablePlan, view: TableView) -> list[str]:
    """Every schema word the plan uses (types, projection, filtered and ordered properties)."""
    words: list[str] = []
    for type_id in (plan.answer_type, plan.start_type):
        if type_id:
            ot = view.types[type_id].type
            words += element_words(ot.name) + element_words(ot.id)
    props = [plan.project] + [f.property for f in plan.filters] + ([plan.order.property] if plan.order else [])
    for p in props:
        if p:
            words += element_words(p)
    return words


def plan_features(found: Candidates, results: Sequence[PlanResult], view: TableView) -> list[dict[str, float]]:
    """One feature dict per plan of ``found`` (see the module docstring)."""
    reading = found.reading
    content = [t for t in reading.tokens if not t.is_stop and t.pos not in ("PUNCT", "NUM", "SYM")]
    counting = count_cue(reading)
    extreme = bool(reading.superlatives)
    degree = reading.superlatives[0] if reading.superlatives else None
    degree_dir = 0.0 if degree is None else 1.0 if degree.direction == "max" else -1.0 if degree.direction else 0.0
    type_fits = {t: type_fit(reading, view, t) for t in view.types}
    ranked = sorted(type_fits, key=lambda t: -type_fits[t])
    head = reading.wh_head.lower()
    atom_spans = {a.span for a in found.atoms}
    value_spans = {a.span for a in found.atoms if a.link is not None}
    number_spans = atom_spans - value_spans
    phrase = head_words(reading)
    head_plural = float(any(t.tag in ("NNS", "NNPS") and t.lemma.lower() == head for t in reading.tokens))
    near_degree = words_near(reading, *degree.span, 4) if degree is not None else []
    best_proj: dict[str, float] = {}
    for type_id, table in view.types.items():
        best_proj[type_id] = max((phrase_fit(element_words(p), phrase) for p in table.properties), default=0.0)
    base: dict[str, float] = {
        "count_cue": float(counting), "extreme_cue": float(extreme), "degree_dir": degree_dir,
        "distinct_word": float(bool(_DISTINCT.search(reading.text))), "q_len": float(len(reading.tokens)),
        "n_quantities": float(len(reading.quantities)), "n_quoted": float(len(reading.quoted)),
        "atoms": float(len(atom_spans)),
    }
    for w in _WH:
        base[f"wh_{w.replace(' ', '_') or 'none'}"] = float(reading.wh == w)
    rows = []
    for plan, result in zip(found.plans, results, strict=True):
        f = dict(base)
        used = found.used.get(plan.key(), ())
        table = view.types[plan.answer_type]
        ot = table.type
        f["t_fit"] = type_fits[plan.answer_type]
        f["t_head"] = float(bool(head) and any(similar(head, w) for w in element_words(ot.name) + element_words(ot.id)))
        f["t_rank"] = float(ranked.index(plan.answer_type))
        project = plan.project or ot.display_key
        f["proj_display"] = float(project == ot.display_key)
        f["proj_fit"] = prop_fit(reading, view, plan.answer_type, project) if project in table.properties else 0.0
        f["proj_head"] = float(bool(head) and any(similar(head, w) for w in element_words(project)))
        f["proj_numeric"] = float(project in table.properties and table.is_numeric(project))
        f["t_phrase"] = max(phrase_fit(element_words(ot.name), phrase), phrase_fit(element_words(ot.id), phrase))
        f["s_phrase"] = (phrase_fit(element_words(view.types[plan.start_type].type.name), phrase)
                         if plan.start_type else 0.0)
        f["proj_phrase"] = phrase_fit(element_words(project), phrase)
        f["proj_phrase_best"] = float(f["proj_phrase"] >= best_proj[plan.answer_type] and f["proj_phrase"] > 0)
        f["proj_text_len"], f["proj_unique"] = table.shape(project)
        f["head_plural"] = head_plural
        f["plural_many"] = head_plural * float(len(result.answers) > 1)
        f["proj_id_like"] = float(any(w in ("id", "code", "number", "no") for w in element_words(project)))
        f["head_is_type"] = float(f["t_phrase"] > 0 and f["proj_phrase"] == 0)
        f["proj_filtered"] = float(any(x.property == project and x.on == "answer" for x in plan.filters))
        values = [a for a in used if a.link is not None]
        numbers = [a for a in used if a.link is None]
        f["n_filters"] = float(len(plan.filters))
        f["n_value"] = float(len(values))
        f["n_number"] = float(len(numbers))
        f["n_contains"] = float(sum(x.op == "contains" for x in plan.filters))
        f["n_or"] = float(sum(len(x.values) > 1 for x in plan.filters))
        f["n_start_filters"] = float(sum(x.on == "start" for x in plan.filters))
        spans = {a.span for a in used}
        f["atoms_unused"] = float(len({s for s in atom_spans if not any(_cross(s, u) for u in spans)}))
        f["atoms_unused_value"] = float(len({s for s in value_spans if not any(_cross(s, u) for u in spans)}))
        f["atoms_unused_number"] = float(len({s for s in number_spans if not any(_cross(s, u) for u in spans)}))
        f["value_min_tokens"] = float(min((a.link.tokens for a in values), default=0))
        f["value_named"] = float(min((a.link.named for a in values), default=1))
        f["value_rows_frac"] = float(max((a.link.rows / max(len(view.types[a.type_id]), 1) for a in values),
                                         default=0.0))
        f["value_prop_fit"] = float(min((prop_fit(reading, view, a.type_id, a.filter.property) for a in values),
                                        default=0.0))
        f["value_on_display"] = float(any(a.filter.property == view.types[a.type_id].type.display_key
                                          for a in values))
        f["number_fit_min"] = float(min((a.fit for a in numbers), default=0.0))
        f["number_fit_max"] = float(max((a.fit for a in numbers), default=0.0))
        f["year_on_date"] = float(any(not view.types[a.type_id].is_numeric(a.filter.property) for a in numbers))
        f["join"] = float(bool(plan.start_type))
        f["path_len"] = float(len(plan.path))
        if plan.start_type:
            st = view.types[plan.start_type].type
            f["s_fit"] = type_fits[plan.start_type]
            f["s_head"] = float(bool(head) and any(similar(head, w) for w in element_words(st.name)))
        else:
            f["s_fit"] = f["s_head"] = 0.0
        f["op_count"] = float(plan.op == "count")
        f["op_count_distinct"] = float(plan.op == "count_distinct")
        f["op_maxmin"] = float(plan.op in ("max", "min"))
        order = plan.order
        f["order"] = float(order is not None)
        f["order_on_start"] = float(order is not None and order.on == "start")
        sign = 0.0 if order is None else 1.0 if order.op == "argmax" else -1.0
        if plan.op in ("max", "min"):
            sign = 1.0 if plan.op == "max" else -1.0
        f["order_sign"] = sign
        order_prop = order.property if order is not None else plan.project if plan.op in ("max", "min") else ""
        order_type = (plan.start_type if order is not None and order.on == "start" else plan.answer_type)
        is_date = bool(order_prop) and (not view.types[order_type].is_numeric(order_prop)
                                        or any(w in _DATE_WORDS for w in element_words(order_prop)))
        f["order_date"] = float(is_date)
        f["order_fit"] = prop_fit(reading, view, order_type, order_prop) if order_prop else 0.0
        f["order_near"] = (sum(any(similar(w, n) for n in near_degree) for w in element_words(order_prop))
                           / max(len(element_words(order_prop)), 1)) if order_prop else 0.0
        f["dir_agree"] = degree_dir * sign
        f["dir_agree_date"] = degree_dir * sign * (-1.0 if is_date else 1.0)
        n = len(result.answers)
        f["n_answers_log"] = math.log1p(n)
        f["empty"] = float(n == 0 or bool(result.problem) or (plan.op in ("count", "count_distinct")
                                                              and result.count == 0))
        f["all_rows"] = float(len(result.rows) == len(table) and len(table) > 1)
        f["single_answer"] = float(n == 1)
        f["count_value_log"] = math.log1p(result.count or 0)
        f["answer_rows_frac"] = len(result.rows) / max(len(table), 1)
        words = plan_words(plan, view)
        covered = sum(explained(t, spans, words) for t in content)
        f["coverage"] = covered / max(len(content), 1)
        f["unexplained"] = float(len(content) - covered)
        rows.append(f)
    return rows


def _cross(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def as_matrix(rows: Sequence[dict[str, Any]]) -> list[list[float]]:
    return [[float(r.get(name, 0.0)) for name in FEATURES] for r in rows]

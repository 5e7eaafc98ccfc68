"""Agent evaluation (``kgrag agent-eval``): questions with gold answers, answered one by one, scored as sets.

    items, skipped = read_questions(Path("questions.jsonl"))
    report = evaluate(items, answer_fn)      # answer_fn(question) -> the agent's final state
    report["figures"]                         # {"n", "hits@1", "hit", "f1", "exact", "topic_acc", "p50_ms", …}

Files: the CE-Prompt format (a JSON list of ``{"input", "cypher"}``; gold computed by executing the Cypher on the
raw disease data, :mod:`kgrag.agent.training.gold`, skipped questions counted by reason), JSONL of
``{"question", "answers"[, "topic"]}``, or (a triple graph) MetaQA lines ``question<TAB>a1|a2``
(:func:`read_metaqa`). Metrics per question, averaged over the ``n`` scored questions:
**hits@1** (the top answer is gold: the first ranked answer on a triple graph, else the first value), **hit** (any predicted value is gold), set **F1**, **exact** (the predicted set equals the gold set); **topic_acc**
over the questions whose gold topic is known (the agent's linked topic name equals it); **both_right** where the
gold schema label is known too (topic and the planned intent both right); latency p50/p95 of the
whole agent turn. Values compare after stripping whitespace.

**Coverage.** The figures above are at full coverage: every question counts, an answer the agent withheld for
low confidence (``withheld``, :mod:`kgrag.agent.turn.confidence`) is scored as given. Beside them, at a
``threshold`` (default 0.5): **coverage** (the share of questions answered with ``confidence`` ≥ threshold) and
**hit_answered** / **f1_answered** over those; ``selective`` has the same at a few thresholds (a risk–coverage
curve).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kgrag.agent.training.gold import load_ce_prompt
from kgrag.data.metaqa import parse_question_line
from kgrag.data.question_files import question_format, read_question_file
from kgrag.graph.csr import CSRGraph
from kgrag.hrag.online.file_eval import strip_brackets
from kgrag.prep.resolve import EntityResolver
from kgrag.reading.tables import number_text

__all__ = ["EvalItem", "answer_source", "evaluate", "read_kg_questions", "read_metaqa", "read_questions", "set_scores", "top_answer"]


@dataclass(frozen=True)
class EvalItem:
    question: str
    answers: tuple[str, ...]
    topic: str | None = None
    label: str | None = None


def _norm(values: Iterable[Any]) -> set[str]:
    """Answer strings compared as gold sets want them: stripped, numbers numerically ("18.0" is "18")."""
    return {number_text(str(v).strip()) for v in values if str(v).strip()}


def set_scores(predicted: Iterable[Any], gold: Iterable[Any]) -> tuple[float, float, float]:
    """``(hit, f1, exact)`` of one predicted value set against the gold set."""
    p, g = _norm(predicted), _norm(gold)
    common = len(p & g)
    f1 = 0.0 if not common else 2 * common / (len(p) + len(g))
    return float(common > 0), f1, float(p == g and bool(g))


def read_questions(path: Path, diseases_dir: Path | None = None) -> tuple[list[EvalItem], Counter]:
    """Items of a CE-Prompt JSON file or a ``{"question", "answers"}`` JSONL file, and skips by reason."""
    text = path.read_text(encoding="utf-8")
    if text.lstrip().startswith("["):
        examples, skipped = load_ce_prompt(path, diseases_dir)
        return [EvalItem(e.question, tuple(e.answers), e.target.topic, e.target.label) for e in examples], skipped
    items: list[EvalItem] = []
    skipped: Counter = Counter()
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            question, answers = row["question"], row["answers"]
            if not isinstance(question, str) or not isinstance(answers, list):
                raise TypeError("question must be a string and answers a list")
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{path}:{number}: not a {{\"question\", \"answers\"}} line ({exc})") from None
        if not answers:
            skipped["empty answers"] += 1
            continue
        items.append(EvalItem(question, tuple(str(a) for a in answers), row.get("topic"), row.get("label")))
    return items, skipped


def read_metaqa(path: Path, no_brackets: bool = False) -> tuple[list[EvalItem], Counter]:
    """Items of a MetaQA-format file (``question<TAB>a1|a2``; the topic in [brackets], its name the item's
    ``topic``), the brackets stripped with ``no_brackets``; unusable lines counted by reason."""
    items: list[EvalItem] = []
    skipped: Counter = Counter()
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        parsed = parse_question_line(line)
        if isinstance(parsed, str):
            skipped[parsed] += 1
            continue
        text, topics, answers = parsed
        items.append(EvalItem(strip_brackets(text) if no_brackets else text, tuple(answers), topics[0]))
    return items, skipped


def read_kg_questions(path: Path, graph: CSRGraph | None, no_brackets: bool = False) -> tuple[list[EvalItem], Counter]:
    """Items of a question file in any format ``kgrag prepare --questions`` reads (canonical JSONL, MetaQA lines,
    WebQSP, CWQ). Answers and the topic given as IRIs or ids become the graph's stored names when ``graph`` (the
    KG prepared here) resolves them, else stay as written; unusable lines and unresolved references are counted."""
    if question_format(path) == "metaqa":
        return read_metaqa(path, no_brackets)
    read = read_question_file(path, "eval")
    skipped: Counter = Counter(issue.reason for issue in read.issues)
    resolver = EntityResolver(graph) if graph is not None else None

    def name(ref: str, ref_id: str | None = None) -> str:
        if resolver is None:
            return ref
        row, how = resolver.resolve(ref, ref_id)
        if row is None:
            skipped[f"reference {how}"] += 1
            return ref
        return graph.entity_names[row] or graph.entity_ids[row]

    items = []
    for q in read.records:
        pairs = list(zip(q.answer_names, q.answer_ids, strict=True)) if len(q.answer_ids) == len(q.answer_names) \
            else [(a, None) for a in q.answer_names]
        answers = tuple(dict.fromkeys(name(a, i) for a, i in pairs))
        topic = name(q.topic_names[0], q.topic_ids[0] if q.topic_ids else None) if q.topic_names else None
        items.append(EvalItem(strip_brackets(q.text) if no_brackets else q.text, answers, topic))
    return items, skipped


def top_answer(state: dict[str, Any]) -> str | None:
    """The run's best answer: the first ranked one (a triple graph), else the first value."""
    ranked = state.get("ranked") or []
    if ranked:
        return str(ranked[0]["name"])
    values = state.get("answers") or []
    return str(values[0]) if values else None


#: the thresholds of the risk–coverage figures (``selective``)
SELECTIVE_THRESHOLDS = (0.0, 0.25, 0.5, 0.75, 0.9)
DEFAULT_THRESHOLD = 0.5


def selective(confidences: Sequence[float], hits: Sequence[float], f1s: Sequence[float], threshold: float
              ) -> dict[str, Any]:
    """Coverage (questions with confidence ≥ ``threshold``) and Hit / F1 over the answered ones."""
    keep = [i for i, c in enumerate(confidences) if c >= threshold]
    n = len(confidences)
    return {"threshold": threshold, "answered": len(keep), "coverage": round(len(keep) / n, 4) if n else 0.0,
            "hit_answered": round(float(np.mean([hits[i] for i in keep])), 4) if keep else None,
            "f1_answered": round(float(np.mean([f1s[i] for i in keep])), 4) if keep else None}


def answer_source(state: dict[str, Any]) -> str:
    """What the answer came from: ``table_plan`` (a plan over rows), ``query_graph`` or ``other`` (the one-relation
    planners, H-RAG paths, ranked chains, text retrieval)."""
    return "table_plan" if state.get("table_plan") else "query_graph" if state.get("query_graph") else "other"


def _planned_label(state: dict[str, Any]) -> str | None:
    """The schema element the answer came from: the first labelled tool call's intent, or — for a query graph
    (its calls are labelled ``qg:…``) — the intent of its path's first hop (``rel:`` / ``rel_in:``)."""
    label = next((c["label"] for c in state.get("tool_calls") or [] if c.get("label")), None)
    path = (state.get("query_graph") or {}).get("path") or []
    if label is not None and label.startswith("qg:") and path:
        return f"{'rel' if path[0].get('direction', 'out') == 'out' else 'rel_in'}:{path[0]['relation']}"
    return label


def evaluate(items: Sequence[EvalItem], answer_fn: Callable[[str], dict[str, Any]],
             progress: Callable[[int], None] | None = None, threshold: float = DEFAULT_THRESHOLD) -> dict[str, Any]:
    """Answer every item; ``{"figures": {...}, "predictions": [...]}`` (one prediction per item, in order)."""
    predictions: list[dict[str, Any]] = []
    scores: list[tuple[float, float, float]] = []
    firsts: list[float] = []
    topic_ok: list[float] = []
    both_ok: list[float] = []
    latencies: list[float] = []
    intents: Counter = Counter()
    confidences: list[float] = []
    for i, item in enumerate(items):
        started = time.perf_counter()
        state = answer_fn(item.question)
        ms = (time.perf_counter() - started) * 1000
        latencies.append(ms)
        values = list(state.get("answers") or state.get("withheld") or [])
        confidence = float(state.get("confidence") or 0.0)
        confidences.append(confidence)
        hit, f1, exact = set_scores(values, item.answers)
        scores.append((hit, f1, exact))
        top = top_answer(state) or (values[0] if values else None)
        firsts.append(float(top is not None and top.strip() in _norm(item.answers)))
        topic = (state.get("topic") or {}).get("name")
        label = _planned_label(state)
        intent = (state.get("schema") or {}).get("ranker")
        if intent:
            intents[intent] += 1
        if item.topic is not None:
            topic_ok.append(float(topic == item.topic))
            if item.label is not None:
                both_ok.append(float(topic == item.topic and label == item.label))
        predictions.append({"question": item.question, "answers": values, "gold": list(item.answers),
                            "topic": topic, "gold_topic": item.topic, "label": label, "gold_label": item.label,
                            "hits@1": firsts[-1], "hit": hit, "f1": round(f1, 4),
                            "exact": exact, "ms": round(ms, 2), "answer": state.get("answer", ""),
                            "intent_planner": intent, "confidence": round(confidence, 4),
                            "withheld": bool(state.get("withheld")), "unused": state.get("unused") or [],
                            "query_graph": state.get("query_graph"), "source": answer_source(state),
                            "cross_check": state.get("cross_check"),
                            "errors": state.get("errors", [])})
        if progress is not None:
            progress(i + 1)
    arr = np.array(scores, dtype=float).reshape(-1, 3)
    lat = np.array(latencies or [0.0])
    figures = {
        "n": len(items),
        "hits@1": round(float(np.mean(firsts)), 4) if firsts else 0.0,
        "hit": round(float(arr[:, 0].mean()), 4) if len(items) else 0.0,
        "f1": round(float(arr[:, 1].mean()), 4) if len(items) else 0.0,
        "exact": round(float(arr[:, 2].mean()), 4) if len(items) else 0.0,
        "topic_acc": round(float(np.mean(topic_ok)), 4) if topic_ok else None,
        "topic_n": len(topic_ok),
        "both_right": round(float(np.mean(both_ok)), 4) if both_ok else None,
        "p50_ms": round(float(np.percentile(lat, 50)), 2),
        "p95_ms": round(float(np.percentile(lat, 95)), 2),
        # which schema-intent planner answered (labelled / self / zero-shot; a triple graph's ranker name)
        "intent_planner": intents.most_common(1)[0][0] if intents else None,
        "intent_planners": dict(intents),
    }
    hits, f1s = arr[:, 0].tolist(), arr[:, 1].tolist()
    figures.update({k: v for k, v in selective(confidences, hits, f1s, threshold).items() if k != "answered"})
    figures["answered"] = sum(c >= threshold for c in confidences)
    figures["selective"] = [selective(confidences, hits, f1s, t)
                            for t in sorted({*SELECTIVE_THRESHOLDS, threshold})]
    return {"figures": figures, "predictions": predictions}

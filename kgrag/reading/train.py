"""Train the plan scorer on real human questions (Spider's databases as networks), split by database, and fit its
confidence on databases it never saw.

    meta = train_planner(data_dir / "spider_train", out=work / "checkpoints/planner/v1", seed=13)
    meta["figures"]["validation"]["f1"]     # the learned scorer's F1 on the validation databases

Contract: the databases are split by :func:`~kgrag.reading.corpus.split_by_database` (seeded); every question's
candidates (:mod:`kgrag.reading.candidates`) are run and labelled right when their answer set equals the gold
(:func:`~kgrag.reading.corpus.answers_match`); a ``HistGradientBoostingClassifier`` (seeded) learns right vs
wrong on the train databases; a logistic calibrator of the best answer's (probability, margin, coverage, words
left) is fitted on picks made on databases the picking model never saw — out-of-fold picks on the train databases
(:data:`CALIBRATION_FOLDS` models split by database) and the validation databases' picks — and the default
abstention threshold is the lowest at which those pooled answers are right ≥ 90 %; the rules' calibrator is fitted
on the validation databases. The held-out databases
are scored once, at the end, and reported apart. Same seed and data → the same model (fingerprint in
``meta.json``).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kgrag.reading.candidates import plan_candidates
from kgrag.reading.corpus import Database, answers_f1, answers_match, read_corpus, split_by_database
from kgrag.reading.execute import run_plan
from kgrag.reading.features import FEATURES, as_matrix, plan_features
from kgrag.reading.reader import read_question
from kgrag.reading.scorer import LearnedScorer, Logistic, PlanScorer, RulesScorer

__all__ = ["Example", "calibration_table", "evaluate_scorer", "examples_of", "train_planner"]

#: questions' candidates kept for training (the rest are the same plan shapes many times)
MAX_TRAIN_CANDIDATES = 400
#: models trained on part of the train databases, whose picks on the rest calibrate the confidence
CALIBRATION_FOLDS = 3


@dataclass
class Example:
    """One question's candidates: feature rows, labels, answers and gold."""

    db_id: str
    question: str
    kind: str
    rows: list[dict[str, float]]
    labels: list[int]
    answers: list[list[str]]
    gold: list[str]
    described: list[str]


def examples_of(dbs: Sequence[Database], progress: Callable[[int, int], None] | None = None) -> list[Example]:
    """Every question of ``dbs`` with its labelled candidates."""
    total = sum(len(db.questions) for db in dbs)
    out: list[Example] = []
    done = 0
    for db in dbs:
        for q in db.questions:
            reading = read_question(q["question"])
            found = plan_candidates(reading, db.view)
            results = [run_plan(p, db.view) for p in found.plans]
            rows = plan_features(found, results, db.view)
            labels = [int(not r.problem and answers_match(r.answers, q["answers"])) for r in results]
            out.append(Example(db.db_id, q["question"], q.get("kind", ""), rows, labels,
                               [r.answers for r in results], list(q["answers"]),
                               [p.describe() for p in found.plans]))
            done += 1
            if progress is not None:
                progress(done, total)
    return out


def _pick(example: Example, scores: np.ndarray) -> tuple[int, float, float]:
    """(best candidate, its score, margin over the best candidate with a different answer set)."""
    best: dict[tuple[str, ...], int] = {}
    for i, answers in enumerate(example.answers):
        key = tuple(sorted(a.lower() for a in answers))
        if i < len(scores) and (key not in best or scores[i] > scores[best[key]]):
            best[key] = i
    ranked = sorted(best.values(), key=lambda i: -scores[i])
    if not ranked:
        return -1, 0.0, 0.0
    second = float(scores[ranked[1]]) if len(ranked) > 1 else 0.0
    return ranked[0], float(scores[ranked[0]]), float(scores[ranked[0]]) - second


def evaluate_scorer(examples: Sequence[Example], scorer: PlanScorer) -> dict[str, Any]:
    """F1 / Hit / exact and per-kind F1 of the scorer's pick, with each pick's calibration inputs and confidence."""
    f1s, hits, exact, conf, inputs, kinds, dbs = [], [], [], [], [], [], []
    for ex in examples:
        scores = scorer.score(ex.rows) if ex.rows else np.zeros(0)
        top, p, margin = _pick(ex, scores)
        answers = ex.answers[top] if top >= 0 else []
        f1 = answers_f1(answers, ex.gold)
        f1s.append(f1)
        hits.append(float(f1 > 0))
        exact.append(float(answers_match(answers, ex.gold)))
        row = ex.rows[top] if top >= 0 else {"coverage": 0.0, "unexplained": 0.0}
        x = [p, margin, row["coverage"], row["unexplained"]]
        inputs.append(x)
        conf.append(scorer.confidence(*x) if top >= 0 else 0.0)
        kinds.append(ex.kind)
        dbs.append(ex.db_id)
    by_kind = {k: round(float(np.mean([f for f, kk in zip(f1s, kinds, strict=True) if kk == k])), 4)
               for k in sorted(set(kinds))}
    by_db = {d: round(float(np.mean([f for f, dd in zip(f1s, dbs, strict=True) if dd == d])), 4)
             for d in sorted(set(dbs))}
    return {"n": len(examples), "f1": _mean(f1s), "hit": _mean(hits), "exact": _mean(exact), "by_kind": by_kind,
            "by_db": by_db, "confidences": conf, "correct": exact, "inputs": inputs, "f1s": f1s}


def _mean(values: Sequence[float]) -> float:
    return round(float(np.mean(values)), 4) if len(values) else 0.0


def calibration_table(confidences: Sequence[float], correct: Sequence[float], bins: int = 10) -> dict[str, Any]:
    """ECE (equal-width bins), the share right among answers at ≥ 0.8, the share of wrong answers at ≥ 0.8, and the
    risk–coverage table (thresholds 0 … 0.95)."""
    c = np.asarray(confidences, dtype=float)
    y = np.asarray(correct, dtype=float)
    if not len(c):
        return {"ece": None, "n": 0}
    edges = np.linspace(0, 1, bins + 1)
    ece = 0.0
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        inside = (c >= lo) & ((c < hi) if hi < 1 else (c <= hi))
        if inside.any():
            ece += inside.mean() * abs(c[inside].mean() - y[inside].mean())
    high = c >= 0.8
    wrong = y < 1
    table = []
    for t in (0.0, 0.3, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95):
        kept = c >= t
        table.append({"threshold": t, "coverage": round(float(kept.mean()), 4),
                      "accuracy": round(float(y[kept].mean()), 4) if kept.any() else None})
    return {"n": int(len(c)), "ece": round(float(ece), 4),
            "right_at_0.8": round(float(y[high].mean()), 4) if high.any() else None,
            "wrong_at_0.8": round(float((high & wrong).sum() / max(wrong.sum(), 1)), 4),
            "answered_at_0.8": round(float(high.mean()), 4), "risk_coverage": table}


def threshold_for(confidences: Sequence[float], correct: Sequence[float], target: float = 0.9) -> float:
    """The lowest confidence threshold at which the answers given are right at least ``target`` of the time."""
    c = np.asarray(confidences, dtype=float)
    y = np.asarray(correct, dtype=float)
    for t in np.round(np.arange(0.3, 1.0, 0.01), 2):
        kept = c >= t
        if kept.sum() >= 10 and y[kept].mean() >= target:
            return float(t)
    return 0.95


def _fit_calibrator(inputs: Sequence[Sequence[float]], correct: Sequence[float], seed: int) -> Logistic | None:
    from sklearn.linear_model import LogisticRegression

    x = np.asarray(inputs, dtype=float)
    y = np.asarray(correct, dtype=int)
    if len(set(y.tolist())) < 2:
        return None
    return Logistic.of(LogisticRegression(C=1.0, random_state=seed, max_iter=1000).fit(x, y))


def _fit(examples: Sequence[Example], seed: int, max_iter: int) -> Any:
    """The classifier of right vs wrong candidates (each question weighs one; right candidates five times)."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    x, y, w = [], [], []
    rng = np.random.default_rng(seed)
    for ex in examples:
        idx = np.arange(len(ex.rows))
        if len(idx) > MAX_TRAIN_CANDIDATES:
            right = [i for i in idx if ex.labels[i]]
            rest = rng.choice([i for i in idx if not ex.labels[i]], MAX_TRAIN_CANDIDATES - len(right), replace=False)
            idx = np.array(sorted([*right, *rest.tolist()]))
        weight = 1.0 / max(len(idx), 1)
        x += as_matrix([ex.rows[i] for i in idx])
        y += [ex.labels[i] for i in idx]
        w += [weight * (5.0 if ex.labels[i] else 1.0) for i in idx]
    model = HistGradientBoostingClassifier(max_iter=max_iter, learning_rate=0.04, max_leaf_nodes=31,
                                           min_samples_leaf=40, l2_regularization=1.0, random_state=seed)
    return model.fit(np.asarray(x, dtype=float), np.asarray(y, dtype=int), sample_weight=np.asarray(w, dtype=float))


def train_planner(root: Path, out: Path, seed: int = 13, max_iter: int = 600,
                  progress: Callable[[str, int, int], None] | None = None,
                  held_out: bool = True) -> dict[str, Any]:
    """Train, calibrate, save to ``out`` (``forest.npz``, ``planner.joblib``, ``meta.json``,
    ``rules_calibrator.json``) and return the meta (see the module docstring)."""
    started = time.time()
    dbs = read_corpus(root)
    train, val, held = split_by_database(dbs, seed)

    def step(name: str) -> Callable[[int, int], None] | None:
        return None if progress is None else (lambda i, n: progress(name, i, n))

    ex_train = examples_of(train, step("train"))
    ex_val = examples_of(val, step("validation"))
    model = _fit(ex_train, seed, max_iter)
    learned = LearnedScorer(model, None, {})
    # the calibrator learns from picks on databases the scoring model never saw: out-of-fold picks on the train
    # databases (CALIBRATION_FOLDS models, split by database) and the validation databases' picks
    pool_inputs, pool_correct = [], []
    train_ids = sorted({ex.db_id for ex in ex_train})
    for k in range(CALIBRATION_FOLDS):
        fold = set(train_ids[k::CALIBRATION_FOLDS])
        fold_model = LearnedScorer(_fit([ex for ex in ex_train if ex.db_id not in fold], seed, max_iter), None, {})
        picks = evaluate_scorer([ex for ex in ex_train if ex.db_id in fold], fold_model)
        pool_inputs += picks["inputs"]
        pool_correct += picks["correct"]
        if progress is not None:
            progress("calibration folds", k + 1, CALIBRATION_FOLDS)
    val_learned = evaluate_scorer(ex_val, learned)
    pool_inputs += val_learned["inputs"]
    pool_correct += val_learned["correct"]
    learned.calibrator = _fit_calibrator(pool_inputs, pool_correct, seed)
    val_learned = evaluate_scorer(ex_val, learned)
    candidates = sum(min(len(ex.rows), MAX_TRAIN_CANDIDATES) for ex in ex_train)
    rules = RulesScorer()
    val_rules = evaluate_scorer(ex_val, rules)
    rules.calibrator = _fit_calibrator(val_rules["inputs"], val_rules["correct"], seed)
    val_rules = evaluate_scorer(ex_val, rules)
    figures: dict[str, Any] = {
        "train": _summary(evaluate_scorer(ex_train, learned)),
        "validation": _summary(val_learned) | {"calibration": calibration_table(val_learned["confidences"],
                                                                                 val_learned["correct"])},
        "validation_rules": _summary(val_rules) | {"calibration": calibration_table(val_rules["confidences"],
                                                                                    val_rules["correct"])},
    }
    pooled = [learned.confidence(*x) for x in pool_inputs]
    figures["calibration_pool"] = calibration_table(pooled, pool_correct) | {"n": len(pooled)}
    threshold = threshold_for(pooled, pool_correct)
    figures["min_confidence_for_90"] = threshold
    if held_out:
        ex_held = examples_of(held, step("held-out"))
        held_learned = evaluate_scorer(ex_held, learned)
        held_rules = evaluate_scorer(ex_held, rules)
        figures["held_out"] = _summary(held_learned) | {
            "calibration": calibration_table(held_learned["confidences"], held_learned["correct"])}
        figures["held_out_rules"] = _summary(held_rules) | {
            "calibration": calibration_table(held_rules["confidences"], held_rules["correct"])}
    out.mkdir(parents=True, exist_ok=True)
    blob = json.dumps({"seed": seed, "x": candidates, "features": list(FEATURES), "max_iter": max_iter,
                       "train": [d.db_id for d in train]}, sort_keys=True).encode()
    meta = {"seed": seed, "max_iter": max_iter, "data": str(root), "n_databases": len(dbs),
            "split": {"train": [d.db_id for d in train], "validation": [d.db_id for d in val],
                      "held_out": [d.db_id for d in held]},
            "questions": {"train": len(ex_train), "validation": len(ex_val)}, "candidates": candidates,
            "figures": figures, "fingerprint": hashlib.sha256(blob).hexdigest()[:16],
            "seconds": round(time.time() - started, 1)}
    learned.meta = meta
    learned.save(out)
    (out / "rules_calibrator.json").write_text(
        json.dumps(rules.calibrator.to_dict() if rules.calibrator is not None else None), encoding="utf-8")
    return meta


def _summary(result: dict[str, Any]) -> dict[str, Any]:
    return {k: result[k] for k in ("n", "f1", "hit", "exact", "by_kind", "by_db")}

"""The plan scorer: a gradient-boosted classifier of (question, candidate plan) learned from real human questions
over many databases, with a calibrated confidence — and the rules (hand-set weights over the same features) as
the fallback when no model is trained.

    scorer = load_scorer()                 # the trained model when one is found, else RulesScorer()
    probs = scorer.score(rows)             # one probability per candidate (rows: kgrag.reading.features)
    scorer.confidence(top=0.9, margin=0.5, coverage=1.0, unexplained=0)   # calibrated: P(right)

Contract: :class:`LearnedScorer` holds a scikit-learn ``HistGradientBoostingClassifier`` over
:data:`~kgrag.reading.features.FEATURES` (its trees saved as numpy arrays, ``forest.npz``, and loaded without
scikit-learn: :mod:`kgrag.reading.forest`) and a logistic calibrator (:class:`Logistic`, its numbers in
``meta.json``) of the best answer's (probability, margin over the best *different* answer, coverage of the
question's words, words left unexplained), fitted on picks made on databases the model never saw; ``meta.json``
also holds the seed, the split, the figures, the feature list and the fingerprint. :func:`load_scorer` looks in
``$KGRAG_PLANNER_MODEL`` (a folder), then ``<work>/checkpoints/planner/current``, then the model shipped in the
package (``kgrag/reading/model/``) — skipping, with one warning, a model trained on other features — and falls back
to :class:`RulesScorer`, whose confidence is calibrated too when the shipped folder has ``rules_calibrator.json``.
"""

from __future__ import annotations

import json
import logging
import math
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from kgrag.reading.features import FEATURES, as_matrix
from kgrag.reading.forest import Forest
from kgrag.versioned import VersionedCache

__all__ = ["LearnedScorer", "PlanScorer", "RulesScorer", "SHIPPED", "load_scorer", "model_folders"]

log = logging.getLogger(__name__)

SHIPPED = Path(__file__).resolve().parent / "model"
MODEL_FILE = "planner.joblib"
FOREST_FILE = "forest.npz"
META_FILE = "meta.json"

#: the rules' weights (hand-set, read on the spider train databases' misses; the fallback's ranking)
RULE_WEIGHTS: dict[str, float] = {
    "t_fit": 1.0, "t_head": 1.0, "proj_fit": 0.8, "proj_head": 1.0, "proj_display": 0.3,
    "atoms_unused": -1.0, "atoms_unused_value": -0.5, "n_value": 0.3, "value_named": 0.3, "value_prop_fit": 0.3,
    "number_fit_min": 0.4, "join": -0.3, "path_len": -0.2, "s_fit": 0.5,
    "count_cue": 0.0, "op_count": 1.5, "op_count_distinct": 0.8, "op_maxmin": 0.6, "order": 0.6,
    "order_fit": 0.5, "dir_agree_date": 0.8, "empty": -3.0, "all_rows": -0.2, "coverage": 1.5,
}


def _rules_logit(rows: Sequence[dict[str, float]]) -> np.ndarray:
    out = []
    for r in rows:
        z = sum(w * r.get(k, 0.0) for k, w in RULE_WEIGHTS.items())
        # a count plan when (and only when) the question counts; an order only when it says a superlative
        counts, asked = bool(r.get("op_count") or r.get("op_count_distinct")), bool(r.get("count_cue"))
        z += 2.0 if counts and asked else -2.0 if counts != asked else 0.0
        if (r.get("order") or r.get("op_maxmin")) and not r.get("extreme_cue"):
            z -= 2.0
        out.append(z)
    return np.array(out, dtype=float)


class PlanScorer(Protocol):
    name: str

    def score(self, rows: Sequence[dict[str, float]]) -> np.ndarray: ...

    def confidence(self, top: float, margin: float, coverage: float, unexplained: float) -> float: ...


class Logistic:
    """A fitted logistic calibrator as numbers: ``P = 1 / (1 + exp(-(x · coef + intercept)))``."""

    def __init__(self, coef: Sequence[float], intercept: float) -> None:
        self.coef = np.asarray(coef, dtype=float)
        self.intercept = float(intercept)

    @classmethod
    def of(cls, fitted: Any) -> Logistic | None:
        """From a fitted scikit-learn ``LogisticRegression`` (None stays None)."""
        return None if fitted is None else cls(np.ravel(fitted.coef_).tolist(), float(np.ravel(fitted.intercept_)[0]))

    def to_dict(self) -> dict[str, Any]:
        return {"coef": self.coef.tolist(), "intercept": self.intercept}

    def __call__(self, x: Sequence[float]) -> float:
        return float(1.0 / (1.0 + math.exp(-(float(np.dot(self.coef, np.asarray(x, dtype=float))) + self.intercept))))


class _Calibrated:
    calibrator: Logistic | None = None

    def confidence(self, top: float, margin: float, coverage: float, unexplained: float) -> float:
        if self.calibrator is None:
            return float(max(0.0, min(1.0, top * (0.5 + 0.5 * margin) * coverage)))
        return self.calibrator([top, margin, coverage, unexplained])


class RulesScorer(_Calibrated):
    """The LLM-free rules: a logistic of hand-set weights over the features."""

    name = "rules"

    def __init__(self, calibrator: Logistic | None = None) -> None:
        self.calibrator = calibrator

    def score(self, rows: Sequence[dict[str, float]]) -> np.ndarray:
        z = _rules_logit(rows)
        return 1.0 / (1.0 + np.exp(-(z - 3.0)))


class LearnedScorer(_Calibrated):
    """The trained classifier (see the module docstring): scikit-learn's model while training, its trees as numpy
    arrays (:class:`~kgrag.reading.forest.Forest`) once loaded — the agent never imports scikit-learn."""

    def __init__(self, model: Any, calibrator: Logistic | None, meta: dict[str, Any]) -> None:
        self.model = model
        self.calibrator = calibrator
        self.meta = meta
        self.name = f"learned:{meta.get('fingerprint', '?')[:10]}"

    def score(self, rows: Sequence[dict[str, float]]) -> np.ndarray:
        if not rows:
            return np.zeros(0)
        x = np.array(as_matrix(rows), dtype=float)
        if isinstance(self.model, Forest):
            return self.model.proba(x)
        from threadpoolctl import threadpool_limits

        # one thread: a question's few hundred rows are scored faster than OpenMP's threads start, and two
        # processes' spinning OpenMP teams on two cores slowed scoring tenfold (measured)
        with threadpool_limits(1):
            return self.model.predict_proba(x)[:, 1]

    def save(self, folder: Path) -> None:
        """``forest.npz`` (the trees) and ``meta.json`` (with the feature list and the calibrator), plus the
        scikit-learn model as ``planner.joblib`` for whoever wants to inspect or extend it."""
        import joblib

        folder.mkdir(parents=True, exist_ok=True)
        forest = self.model if isinstance(self.model, Forest) else Forest.from_model(self.model)
        forest.save(folder / FOREST_FILE)
        if not isinstance(self.model, Forest):
            joblib.dump({"model": self.model, "features": list(FEATURES)}, folder / MODEL_FILE)
        meta = {**self.meta, "features": list(FEATURES),
                "calibrator": self.calibrator.to_dict() if self.calibrator is not None else None}
        (folder / META_FILE).write_text(json.dumps(meta, indent=1), encoding="utf-8")

    @classmethod
    def load(cls, folder: Path) -> LearnedScorer:
        meta = json.loads((folder / META_FILE).read_text(encoding="utf-8"))
        if list(meta.get("features") or []) != list(FEATURES):
            raise ValueError(f"{folder}: the model was trained on other features; retrain (kgrag train-planner)")
        calibrator = meta.get("calibrator")
        return cls(Forest.load(folder / FOREST_FILE),
                   Logistic(calibrator["coef"], calibrator["intercept"]) if calibrator else None, meta)


def model_folders() -> list[Path]:
    """Where a trained scorer is looked for, in order."""
    out = []
    env = os.environ.get("KGRAG_PLANNER_MODEL")
    if env:
        out.append(Path(env))
    try:
        from kgrag.config import get_settings

        out.append(get_settings().checkpoint_dir / "planner" / "current")
    except Exception:  # noqa: BLE001 — settings that cannot be read leave the shipped model
        pass
    out.append(SHIPPED)
    return out


def _forest_mtime(folder: Path) -> float | None:
    try:
        return (folder / FOREST_FILE).stat().st_mtime
    except OSError:
        return None


_LOCK = threading.Lock()
_REFUSED: set[Path] = set()
#: the trained scorers, one per model folder, loaded again when its forest file changes
_LOADED: VersionedCache[Path, LearnedScorer] = VersionedCache(_forest_mtime, LearnedScorer.load)


def load_scorer(rules_only: bool = False) -> PlanScorer:
    """The first trained scorer found (see :func:`model_folders`), else the rules (cached per file and mtime)."""
    if rules_only or os.environ.get("KGRAG_PLANNER", "").lower() == "rules":
        return _rules()
    for folder in model_folders():
        if not (folder / FOREST_FILE).is_file():
            continue
        try:
            return _LOADED.get(folder)
        except (ValueError, KeyError, OSError) as exc:  # a model of other features: the next one, said once
            with _LOCK:
                if folder in _REFUSED:
                    continue
                _REFUSED.add(folder)
            log.warning("plan scorer %s not used: %s", folder, exc)
    return _rules()


def _rules() -> RulesScorer:
    path = SHIPPED / "rules_calibrator.json"
    if path.is_file():
        fitted = json.loads(path.read_text(encoding="utf-8"))
        return RulesScorer(Logistic(fitted["coef"], fitted["intercept"]))
    return RulesScorer()

"""The answer confidence of the query graphs and of the other planners, fitted to data (issue 49 §5): a logistic
per source over the planner's own confidence, whether a part of the question went unused, how many content words
the question has (:func:`content_words`), and the cross-check
against the plan over rows (:func:`kgrag.agent.turn.row_plans.cross_check`: whether it agrees, the plan's
calibrated confidence), fitted by
``bench/answer_confidence.py`` on the agent's answers to the Spider validation databases and the dev question sets,
shipped beside this module as ``answer_confidence.json`` (its material and command inside).

    fitted_confidence("query_graph", 1.0, 0, {"agree": False, "confidence": 0.9})   # what that was worth
    fitted_confidence("table_plan", 0.8, 0)      # 0.8: a plan over rows is calibrated by its scorer already

Contract: an answer with a cross-check uses its source's fit, one without (no plan over rows: a KG without classes,
a network over the row limit, a Chinese question) the source's ``<source>:unchecked`` fit over the raw confidence
and the unused parts alone; a source without a fit (or ``KGRAG_ANSWER_CONFIDENCE=raw``, which the fitting bench sets to read the raw
values) keeps its raw confidence; the result is rounded to 4 places and lies in [0, 1]. The fit is read once.
"""

from __future__ import annotations

import json
import math
import os
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from kgrag.search.keywords import STOPWORDS

__all__ = ["FIT_FILE", "FEATURES", "features", "fitted_confidence"]

FIT_FILE = Path(__file__).with_name("answer_confidence.json")
#: the fit's inputs, in order
FEATURES = ("raw", "unused", "agree", "plan_confidence", "words")
#: content words counted up to this many (a longer question asks more, and more can go wrong)
MAX_WORDS = 20
_WORD = re.compile(r"[^\W_]+")


def content_words(question: str) -> int:
    """How many words of the question are not stop words (at most :data:`MAX_WORDS`)."""
    return min(MAX_WORDS, sum(1 for w in _WORD.findall(question.lower()) if w not in STOPWORDS))


def features(raw: float, unused: int, cross: dict[str, Any] | None, question: str = "") -> list[float]:
    """The fit's inputs (:data:`FEATURES`) of one answer."""
    checked = cross is not None  # whether there is one picks the fit (see fitted_confidence)
    return [float(raw), float(unused > 0), float(checked and bool(cross.get("agree"))),
            float(cross.get("confidence") or 0.0) if checked else 0.0, content_words(question) / MAX_WORDS]


@lru_cache(maxsize=1)
def _fits() -> dict[str, dict[str, float]]:
    if not FIT_FILE.is_file():
        return {}
    return dict(json.loads(FIT_FILE.read_text(encoding="utf-8")).get("sources") or {})


def fitted_confidence(source: str, raw: float, unused: int, cross: dict[str, Any] | None = None,
                      question: str = "") -> float:
    """``raw`` as the fitted probability of a right answer from ``source`` (see the module docstring)."""
    fits = _fits()
    coef = fits.get(source if cross is not None else f"{source}:unchecked") or fits.get(source)
    if coef is None or os.environ.get("KGRAG_ANSWER_CONFIDENCE", "").lower() == "raw":
        return float(raw)
    x = features(raw, unused, cross, question)
    z = coef.get("intercept", 0.0) + sum(coef.get(name, 0.0) * v for name, v in zip(FEATURES, x, strict=True))
    return round(1.0 / (1.0 + math.exp(-z)), 4)

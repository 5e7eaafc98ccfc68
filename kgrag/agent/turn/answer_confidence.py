"""The answer confidence of the query graphs and of the other planners, fitted to data (issue 49 §5): a logistic
over (the planner's own confidence, whether a part of the question went unused) per source, fitted by
``bench/answer_confidence.py`` on the agent's answers to the Spider validation databases and the dev question sets,
shipped beside this module as ``answer_confidence.json`` (its material and command inside).

    fitted_confidence("query_graph", 1.0, 0)     # 0.93: what a raw 1.0 was worth on the material
    fitted_confidence("table_plan", 0.8, 0)      # 0.8: a plan over rows is calibrated by its scorer already

Contract: a source without a fit (or ``KGRAG_ANSWER_CONFIDENCE=raw``, which the fitting bench sets to read the raw
values) keeps its raw confidence; the result is rounded to 4 places and lies in [0, 1]. The fit is read once.
"""

from __future__ import annotations

import json
import math
import os
from functools import lru_cache
from pathlib import Path

__all__ = ["FIT_FILE", "fitted_confidence"]

FIT_FILE = Path(__file__).with_name("answer_confidence.json")


@lru_cache(maxsize=1)
def _fits() -> dict[str, dict[str, float]]:
    if not FIT_FILE.is_file():
        return {}
    return dict(json.loads(FIT_FILE.read_text(encoding="utf-8")).get("sources") or {})


def fitted_confidence(source: str, raw: float, unused: int) -> float:
    """``raw`` as the fitted probability of a right answer from ``source`` (see the module docstring)."""
    coef = _fits().get(source)
    if coef is None or os.environ.get("KGRAG_ANSWER_CONFIDENCE", "").lower() == "raw":
        return float(raw)
    z = coef["intercept"] + coef["raw"] * float(raw) + coef["unused"] * float(unused > 0)
    return round(1.0 / (1.0 + math.exp(-z)), 4)

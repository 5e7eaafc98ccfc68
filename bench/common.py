"""Shared benchmark helpers: result files, percentiles, measuring a step in a fresh process, the held-out medical
questions."""

from __future__ import annotations

import json
import multiprocessing as mp
import random
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"


def write_result(name: str, figures: dict, baseline: dict, ratio: dict | float, split: str, n: int,
                 module: str | None = None) -> Path:
    """Write ``bench/results/<name>.json`` in the project's format and print it (``module``: the bench's module when
    it is not ``bench.<name>``, for the command line recorded)."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    payload = {
        "name": name,
        "figures": figures,
        "baseline": baseline,
        "ratio": ratio,
        "split": split,
        "n": n,
        "command": "python -m bench." + (module or name) + (" " + " ".join(sys.argv[1:]) if len(sys.argv) > 1 else ""),
    }
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(payload, indent=2))
    print(json.dumps(payload, indent=2))
    return path


def percentiles(seconds: list[float]) -> dict:
    a = np.asarray(seconds) * 1000.0
    return {"p50_ms": round(float(np.percentile(a, 50)), 4), "p95_ms": round(float(np.percentile(a, 95)), 4),
            "mean_ms": round(float(a.mean()), 4)}


def held_out_patient_questions(data_dir: Path, n: int | None = 400, seed: int = 0) -> list[str]:
    """The held-out medical patient questions: the last 20 % of ``medical/questions_cypher_train.json`` under
    ``data_dir``, shuffled with ``seed``, the first ``n`` (None: all 3,940)."""
    records = json.loads((data_dir / "medical" / "questions_cypher_train.json").read_text(encoding="utf-8"))
    texts = [r["input"] for r in records if isinstance(r, dict) and r.get("input")]
    held = texts[int(len(texts) * 0.8):]
    random.Random(seed).shuffle(held)
    return held[:n] if n is not None else held


def ms_percentiles(milliseconds: list[float], digits: int = 2) -> dict:
    """p50 / p95 of values already in milliseconds (the H-RAG scale benches' figures)."""
    a = np.asarray(milliseconds, dtype=np.float64)
    return {"p50": round(float(np.percentile(a, 50)), digits), "p95": round(float(np.percentile(a, 95)), digits)}


def _child(fn: Callable[[], dict], queue: mp.Queue) -> None:
    start = time.perf_counter()
    extra = fn()
    elapsed = time.perf_counter() - start
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    queue.put({"seconds": round(elapsed, 3), "peak_rss_mib": round(peak_mib, 1), **extra})


def measure_in_subprocess(fn: Callable[[], dict]) -> dict:
    """Run ``fn`` (a module-level function) in a fresh interpreter and return its wall time, the process's
    peak RSS and whatever ``fn`` returns."""
    ctx = mp.get_context("spawn")
    queue: mp.Queue = ctx.Queue()
    proc = ctx.Process(target=_child, args=(fn, queue))
    proc.start()
    result = queue.get()
    proc.join()
    return result

"""Data prep on MetaQA, step by step, in a fresh work dir: seconds per step and for an idempotent re-run.

Steps: build-graph (read kb.txt, CSR, N-Triples), load-oxigraph (bulk load), prepare-questions (resolve ids,
split, answer reachability ≤ 3 hops for 39,138 questions). Baseline: the first full pass; ratio: re-run / first.
Run: ``python -m bench.prepare``.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from bench.common import write_result
from kgrag.config import get_settings
from kgrag.prep import steps


def run_steps(data_dir: Path, out: Path) -> dict:
    fp = steps.input_fingerprint("metaqa", data_dir)
    seconds = {}
    t = time.perf_counter()
    graph = steps.build_graph("metaqa", data_dir, out, fp)
    seconds["build_graph"] = round(time.perf_counter() - t, 5)
    t = time.perf_counter()
    steps.load_store(out, fp)
    seconds["load_oxigraph"] = round(time.perf_counter() - t, 5)
    t = time.perf_counter()
    questions = steps.prepare_questions("metaqa", data_dir, out, fp)
    seconds["prepare_questions"] = round(time.perf_counter() - t, 5)
    seconds["total"] = round(sum(seconds.values()), 5)
    return {"seconds": seconds, "triples": graph["triples"], "questions": questions["questions"],
            "unreachable_within_3": questions["unreachable_within_3"], "hop_histogram": questions["hop_histogram"]}


def main() -> None:
    data_dir = get_settings().data_dir
    with tempfile.TemporaryDirectory(prefix="kgrag-bench-prep-") as tmp:
        out = Path(tmp) / "metaqa"
        first = run_steps(data_dir, out)
        again = run_steps(data_dir, out)
    figures = {"first_run": first, "idempotent_rerun": again["seconds"]}
    write_result("prepare", figures, baseline={"first_run_total_s": first["seconds"]["total"]},
                 ratio={"rerun_vs_first": round(again["seconds"]["total"] / first["seconds"]["total"], 5)},
                 split="metaqa kb.txt + 1/2/3-hop dev questions", n=first["questions"])


if __name__ == "__main__":
    main()

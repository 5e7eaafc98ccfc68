"""G_retrieval samples of one split built by the default task runner (one process, one shard) and by a 2-worker
local Dask cluster (prefect-dask, shards of whole PPR batches), in the same run: seconds, the ratio, whether the
two files hold the same arrays, and per-question costs for a Freebase-scale estimate.

    python -m bench.dask_samples [--split validation] [--workers 2]

The split's existing samples file is set aside for the run and put back after it. Writes
bench/results/dask_samples.json.
"""

from __future__ import annotations

import argparse
import os
import shutil
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default="metaqa")
    parser.add_argument("--split", default="validation")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import numpy as np
    from prefect.testing.utilities import prefect_test_harness

    from bench.common import write_result
    from kgrag.config import get_settings
    from kgrag.hrag import pipeline
    from kgrag.hrag.config import RetrieverConfig

    cfg = RetrieverConfig()
    settings = get_settings()
    graph = pipeline.load_graph(settings, args.dataset)
    questions = pipeline.split_questions(settings, args.dataset, args.split, cfg)
    path = pipeline.samples_path(settings, args.dataset, args.split, cfg, questions, graph)
    kept = path.with_name(path.name + ".kept")
    if path.exists():
        shutil.move(path, kept)
    seconds: dict[str, float] = {}
    files: dict[str, object] = {}
    try:
        with prefect_test_harness(server_startup_timeout=120):
            from flows.retrieval_samples import run

            for kind in ("default", "dask"):
                os.environ["KGRAG_TASK_RUNNER"] = kind
                os.environ["KGRAG_DASK_WORKERS"] = str(args.workers)
                get_settings.cache_clear()
                started = time.perf_counter()
                result = run(args.dataset, args.split, cfg.model_dump_json())
                seconds[kind] = time.perf_counter() - started
                with np.load(path) as data:
                    files[kind] = {name: data[name] for name in data.files}
                path.unlink()
                print(f"[bench.dask_samples] {kind}: {seconds[kind]:.1f} s ({result['questions']} questions)",
                      flush=True)
    finally:
        if kept.exists():
            shutil.move(kept, path)
    same = files["default"].keys() == files["dask"].keys() and all(
        np.array_equal(files["default"][k], files["dask"][k]) for k in files["default"])
    n = len(questions)
    per_question_ms = 1000 * seconds["default"] / n
    figures = {"questions": n, "default_s": round(seconds["default"], 1),
               f"dask_{args.workers}_workers_s": round(seconds["dask"], 1), "identical_files": same,
               "per_question_ms_one_process": round(per_question_ms, 2),
               "graph_entities": graph.num_entities, "graph_triples": graph.num_triples,
               "cores": os.cpu_count()}
    write_result("dask_samples", figures, {"default_s": round(seconds["default"], 1)},
                 round(seconds["default"] / seconds["dask"], 3),
                 f"{args.dataset} {args.split} (every question of the split)", n)


if __name__ == "__main__":
    main()

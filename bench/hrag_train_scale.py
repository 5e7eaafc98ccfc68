"""H-RAG trained where it answers: the whole pipeline, cold, on MetaQA inside N synthetic triples, side by side
with MetaQA alone (N = 0) at the same budget, in one run.

Per size N (the haystack of :mod:`bench.haystack_data`: MetaQA's KB + N synthetic triples, its dev questions split
into train / validation by ``kgrag prepare``), in a fresh work dir, each stage a ``kgrag`` command as a user runs it
(its own process under ``/usr/bin/time -v``), at ``make run``'s budget (RUN_RETRIEVER_CONFIG, RUN_GFLOWNET_CONFIG):

1. ``kgrag prepare --dataset hay<N> --triples … --questions …/{1,2,3}-hop/dev.txt --no-store`` (the graph import;
   H-RAG reads the mapped graph, not the SPARQL store);
2. ``kgrag train-retriever`` — retriever validation answer@100 / path@100 per epoch (the seeded early-stop sample);
3. ``kgrag retriever-eval`` — the budget's train and validation g_agent;
4. ``kgrag train-gflownet``;
5. ``kgrag eval --questions <shared/eval>/metaqa/sample1000_{1,2,3}hop.txt --json`` — held-out MetaQA **test**
   questions (1,000 seeded per hop, never trained or tuned on): Hits@1 / Hit / F1 per hop and the answering rate
   (questions per second of answering, the reasoner's load excluded).

Per stage: wall seconds, peak RSS, and the longest silence of its output (seconds between two lines on the
stage's stdout / stderr, a pipe here: what a person watching a log sees). Totals: wall of stages 1–5, the largest
peak RSS. Ratios: N vs 0 (Hits@1 difference per hop, answering rate ratio, retriever answer@100 difference).
``--warm``: the eval stage once more (the test questions' name vectors now stored: the steady answering rate
beside the cold one, which pays each entity's first encoding); ``--warm-only`` runs just that on trained sizes.
``--dask``: on the largest size, ``bench.dask_scale --baseline one-worker`` (the validation split's sample build,
g_agent and answers on a local Dask cluster of 2 workers vs 1).

Run: ``python -m bench.hrag_train_scale [--sizes 0,10000000] [--dask]``; writes bench/results/hrag_train_scale.json
(merged per size, so sizes can be run one at a time). Work dir: ``<KGRAG_WORK_DIR>/bench-train-scale/hay<N>``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import selectors
import shutil
import subprocess
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from bench.common import RESULTS, write_result

console = Console()
HOPS = (1, 2, 3)
STAGES = ("prepare", "train-retriever", "retriever-eval", "train-gflownet", "eval")


def _kgrag() -> str:
    return str(Path(sys.executable).with_name("kgrag"))


def watched_child(args: list[str], env: dict, log: Path) -> dict:
    """Run ``args`` under ``/usr/bin/time -v``, its output lines timestamped as they come (a pipe, as a log
    would be): stdout, wall seconds, peak RSS (GB) and the longest gap between two output lines."""
    started = time.perf_counter()
    proc = subprocess.Popen(["/usr/bin/time", "-v", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, bufsize=1)
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ, "out")
    selector.register(proc.stderr, selectors.EVENT_READ, "err")
    out, err, last, silence, open_streams = [], [], started, 0.0, 2
    with open(log, "w", encoding="utf-8", buffering=1) as fh:  # line-buffered: the log can be watched
        while open_streams:
            for key, _ in selector.select():
                line = key.fileobj.readline()
                if not line:
                    selector.unregister(key.fileobj)
                    open_streams -= 1
                    continue
                now = time.perf_counter()
                if not line.startswith(("\tCommand being timed", "\tUser time")):
                    silence = max(silence, now - last)
                    last = now
                (out if key.data == "out" else err).append(line)
                fh.write(f"{now - started:8.1f} {key.data} {line}")
    proc.wait()
    seconds = time.perf_counter() - started
    text = "".join(err)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:3])} failed ({proc.returncode}); log {log}:\n{text[-3000:]}")
    peak = re.search(r"Maximum resident set size \(kbytes\): (\d+)", text)
    return {"stdout": "".join(out), "seconds": round(seconds, 1),
            "peak_rss_gb": round(int(peak.group(1)) / 2**20, 2) if peak else None,
            "longest_silence_s": round(silence, 1)}


def eval_test(kg: str, name: str, env: dict, work: Path, test_files: dict, tag: str) -> tuple[dict, dict]:
    """``kgrag eval --questions`` on each hop's test sample: figures per hop and the stage's totals."""
    answers: dict = {}
    total = {"seconds": 0.0, "peak_rss_gb": 0.0, "longest_silence_s": 0.0}
    for hop, path in test_files.items():
        result = watched_child([kg, "eval", "--dataset", name, "--questions", str(path), "--hop", str(hop), "--json"],
                               env, work / "logs" / f"{tag}-{hop}hop.log")
        figures = json.loads(result["stdout"].strip().splitlines()[-1])
        answers[str(hop)] = {"n": figures["n"], **{k: round(100 * figures[k], 2) for k in ("hits@1", "hit", "f1")},
                             "answer_s": figures["answer_seconds"],
                             "questions_per_s": round(figures["n"] / figures["answer_seconds"], 1)}
        for k in total:
            total[k] = (total[k] + result[k]) if k == "seconds" else max(total[k], result[k])
    return answers, total


def warm_answering(n: int, root: Path, out: dict) -> None:
    """The eval stage again on the trained size (``--warm``): every name vector the test questions touch is in
    the store now, so this is the steady answering rate (the cold one pays each entity's first encoding)."""
    from bench.haystack import dataset_name
    from kgrag.config import get_settings

    name = dataset_name(n)
    work = root / name
    env = {**os.environ, "KGRAG_WORK_DIR": str(work), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    test_files = {hop: get_settings().data_dir.parent / "eval" / "metaqa" / f"sample1000_{hop}hop.txt" for hop in HOPS}
    answers, _ = eval_test(_kgrag(), name, env, work, test_files, "eval-warm")
    out["test_warm"] = answers
    out["answering_questions_per_s_warm"] = round(sum(a["n"] for a in answers.values())
                                                  / sum(a["answer_s"] for a in answers.values()), 1)


def run_size(n: int, seed: int, root: Path, data: Path) -> dict:
    from bench.haystack import dataset_name, generate_file
    from bench.haystack_data import question_files
    from kgrag.config import get_settings
    from kgrag.main_job.parts import RUN_GFLOWNET_CONFIG, RUN_RETRIEVER_CONFIG

    name = dataset_name(n)
    stats = generate_file(n, data, seed)
    work = root / name
    shutil.rmtree(work, ignore_errors=True)  # cold: no cache, vector, sample or checkpoint from an earlier run
    (work / "logs").mkdir(parents=True)
    env = {**os.environ, "KGRAG_WORK_DIR": str(work), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false"}
    env.pop("KGRAG_PROGRESS", None)
    kg = _kgrag()
    test_files = {hop: get_settings().data_dir.parent / "eval" / "metaqa" / f"sample1000_{hop}hop.txt" for hop in HOPS}
    commands = {
        "prepare": [kg, "prepare", "--dataset", name, "--triples", stats["path"], "--no-store",
                    *[a for q in question_files() for a in ("--questions", str(q))]],
        "train-retriever": [kg, "train-retriever", "--dataset", name, "--config", json.dumps(RUN_RETRIEVER_CONFIG)],
        "retriever-eval": [kg, "retriever-eval", "--dataset", name, "--json"],
        "train-gflownet": [kg, "train-gflownet", "--dataset", name, "--config", json.dumps(RUN_GFLOWNET_CONFIG)],
    }
    out: dict = {"dataset": name, "synthetic_triples": n, "stages": {}, "budget": {
        "retriever": RUN_RETRIEVER_CONFIG, "gflownet": RUN_GFLOWNET_CONFIG}}
    for stage, args in commands.items():
        console.print(f"[bold]{name}[/] {stage} …")
        result = watched_child(args, env, work / "logs" / f"{stage}.log")
        out["stages"][stage] = {k: result[k] for k in ("seconds", "peak_rss_gb", "longest_silence_s")}
        console.print(f"  {result['seconds']} s, peak {result['peak_rss_gb']} GB, longest silence "
                      f"{result['longest_silence_s']} s")
        if stage == "train-retriever":
            epochs = re.findall(r"epoch (\d+): loss [\d.]+, [\d.]+s, val_answer_recall@100 ([\d.]+), "
                                r"\s*val_path_triple_recall@100 ([\d.]+)", result["stdout"].replace("\n", " "))
            out["retriever_validation"] = [{"epoch": int(e), "answer@100": float(a), "path@100": float(p)}
                                           for e, a, p in epochs]
        if stage == "retriever-eval":
            figures = json.loads(result["stdout"].strip().splitlines()[-1])
            out["g_agent_questions"] = {split: f.get("all.n", f.get("n")) for split, f in figures.items()}
    answers, total = eval_test(kg, name, env, work, test_files, "eval")
    out["stages"]["eval"] = {k: round(v, 2) for k, v in total.items()}
    out["test"] = answers
    stages = out["stages"].values()
    out["pipeline_s"] = round(sum(s["seconds"] for s in stages), 1)
    out["peak_rss_gb"] = max(s["peak_rss_gb"] for s in stages)
    out["longest_silence_s"] = max(s["longest_silence_s"] for s in stages)
    out["answering_questions_per_s"] = round(sum(a["n"] for a in answers.values())
                                             / sum(a["answer_s"] for a in answers.values()), 1)
    return out


def dask_run(name: str, root: Path) -> dict:
    env = {**os.environ, "KGRAG_WORK_DIR": str(root / name), "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run([sys.executable, "-m", "bench.dask_scale", "--dataset", name, "--split", "validation",
                           "--workers", "2", "--baseline", "one-worker", "--out", "hrag_train_scale_dask"],
                          env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"bench.dask_scale failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return json.loads((RESULTS / "hrag_train_scale_dask.json").read_text())["figures"]


def show(results: dict) -> None:
    table = Table(title="H-RAG trained at scale (make run's budget; held-out MetaQA test, 1,000 per hop)")
    for column in ("dataset", *STAGES, "total s", "peak GB", "silence s", "ret. ans@100", "Hits@1 1/2/3", "q/s"):
        table.add_column(column, justify="right")
    for row in results.values():
        s = row["stages"]
        last = row.get("retriever_validation", [{}])[-1]
        table.add_row(row["dataset"], *[f"{s[k]['seconds']:.0f}" for k in STAGES], f"{row['pipeline_s']:.0f}",
                      f"{row['peak_rss_gb']:.2f}", f"{row['longest_silence_s']:.0f}",
                      f"{last.get('answer@100', float('nan')):.3f}",
                      " / ".join(f"{row['test'][str(h)]['hits@1']:.1f}" for h in HOPS),
                      f"{row['answering_questions_per_s']:.0f}")
    console.print(table)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="0,10000000")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dask", action="store_true", help="2 Dask workers vs 1 on the largest size")
    parser.add_argument("--warm", action="store_true", help="after the sizes run (or, with --warm-only, on the "
                        "sizes already trained): the eval stage again, the name vectors in the store")
    parser.add_argument("--warm-only", action="store_true", help="only the warm eval, on the sizes trained before")
    args = parser.parse_args(argv)
    from bench.haystack import bench_dirs
    from kgrag.config import get_settings

    data, _ = bench_dirs()
    root = Path(get_settings().work_dir) / "bench-train-scale"
    saved = RESULTS / "hrag_train_scale.json"
    results = json.loads(saved.read_text())["figures"]["sizes"] if saved.is_file() else {}
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    for n in sizes:
        if not args.warm_only:
            results[str(n)] = run_size(n, args.seed, root, data)
        if args.warm or args.warm_only:
            warm_answering(n, root, results[str(n)])
        show(results)
    figures: dict = {"sizes": results, "cores": os.cpu_count()}
    previous = json.loads(saved.read_text())["figures"] if saved.is_file() else {}
    if "dask_2_vs_1_workers" in previous:
        figures["dask_2_vs_1_workers"] = previous["dask_2_vs_1_workers"]
    _write(figures, results)  # the sizes' figures are kept whatever the Dask run does
    if args.dask:
        from bench.haystack import dataset_name

        figures["dask_2_vs_1_workers"] = dask_run(dataset_name(max(sizes)), root)
        _write(figures, results)


def _write(figures: dict, results: dict) -> None:
    base = results.get("0")
    ratio: dict = {}
    if base:
        for key, row in results.items():
            if key == "0":
                continue
            ratio[row["dataset"]] = {
                "hits@1_points_vs_metaqa": {str(h): round(row["test"][str(h)]["hits@1"] - base["test"][str(h)]["hits@1"], 2)
                                            for h in HOPS},
                "answering_speed_ratio": round(row["answering_questions_per_s"] / base["answering_questions_per_s"], 3),
                **({"answering_speed_ratio_warm": round(row["answering_questions_per_s_warm"]
                                                        / base["answering_questions_per_s_warm"], 3)}
                   if "answering_questions_per_s_warm" in row and "answering_questions_per_s_warm" in base else {}),
                "retriever_answer@100_points": round(100 * (row["retriever_validation"][-1]["answer@100"]
                                                            - base["retriever_validation"][-1]["answer@100"]), 2),
                "pipeline_s": row["pipeline_s"], "peak_rss_gb": row["peak_rss_gb"]}
    n = sum(a["n"] for a in (base or next(iter(results.values())))["test"].values()) if results else 0
    write_result("hrag_train_scale", figures, {"dataset": "hay0 (MetaQA alone, the same import, budget and path)"},
                 ratio, "held-out MetaQA test: sample1000_{1,2,3}hop.txt (1,000 seeded test questions per hop); "
                 "retriever figures on the seeded early-stop sample of the validation split", n)


if __name__ == "__main__":
    main()

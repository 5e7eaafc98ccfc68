"""MetaQA in a haystack: H-RAG's quality, latency and memory as the graph around MetaQA grows (1M, 10M, 50M triples).

For each size N (0 = MetaQA alone, the baseline, through the same path) in one run:
1. **generate** ``hay_<N>.nt.gz`` (:mod:`bench.haystack_data`: MetaQA's 133,582 triples + N synthetic ones, cached);
2. **import** it with ``kgrag prepare --dataset hay<N> --triples … --questions {1,2,3}-hop/dev.txt`` (the generic
   import), timed and measured by ``/usr/bin/time -v`` in its own process: import rate (triples read per second
   of the mapped-graph step), peak RSS, ``graph.npz`` size; the embedded SPARQL store is loaded up to
   ``--store-up-to`` triples and its load rate reported (``--no-store`` above that);
3. **train** the retriever and the reasoner at ``make run``'s budget (RUN_RETRIEVER_CONFIG, RUN_GFLOWNET_CONFIG) in
   their own process: seconds, peak RSS, Hits@1 / Hit / F1 per hop on the seeded validation split;
4. **answer**: a fresh reasoner process answers ``--timed`` validation questions one at a time (a warm pass, then
   the timed one): ``answer_question`` p50 / p95 and its stage split, the local PPR alone (the push) and with
   G_retrieval (top-N, triples, topic distances) p50 / p95, the process's
   RSS (private and file-backed: the mapped graph's pages are shared, not copied);
5. **dask** (largest size only, ``--dask``): two Dask workers each open the mapped graph and answer half of the
   validation sample; RSS per worker (private vs shared pages) and the ratio of wall time to one process.
Baseline = the N = 0 row; ratios are N vs baseline. Work dir: ``<KGRAG_WORK_DIR>/bench-haystack``.

Run: ``python -m bench.haystack [--sizes 0,1000000,10000000,50000000] [--timed 200]``; writes
bench/results/haystack.json (merged per size, so sizes can be run one at a time).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from bench.common import RESULTS, ms_percentiles, write_result

console = Console()
HOPS = (1, 2, 3)


def dataset_name(n: int) -> str:
    return "hay0" if n == 0 else f"hay{n // 1_000_000}m" if n % 1_000_000 == 0 else f"hay{n}"


def bench_dirs() -> tuple[Path, Path]:
    from kgrag.config import get_settings

    root = Path(get_settings().work_dir) / "bench-haystack"
    return root / "data", root / "work"


def _env(work: Path) -> dict:
    return {**os.environ, "KGRAG_WORK_DIR": str(work), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
            "TOKENIZERS_PARALLELISM": "false"}


def timed_child(args: list[str], work: Path) -> tuple[str, float, float]:
    """Run ``args`` under ``/usr/bin/time -v``: (stdout, wall seconds, peak RSS in GB)."""
    started = time.perf_counter()
    proc = subprocess.run(["/usr/bin/time", "-v", *args], env=_env(work), capture_output=True, text=True,
                          check=False)
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:4])} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n"
                           f"{proc.stderr[-3000:]}")
    peak = re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr)
    return proc.stdout, seconds, (int(peak.group(1)) / 2**20 if peak else float("nan"))


def generate_file(n: int, data: Path, seed: int) -> dict:
    from bench.haystack_data import generate

    path = data / f"hay_{n}_s{seed}.nt.gz"
    stats_path = path.with_suffix(".json")
    if path.is_file() and stats_path.is_file():
        return json.loads(stats_path.read_text())
    data.mkdir(parents=True, exist_ok=True)
    stats = generate(path, n, seed=seed)
    out = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(stats).items()}
    stats_path.write_text(json.dumps(out))
    return out


def import_size(n: int, triples: Path, work: Path, store: bool) -> dict:
    from bench.haystack_data import question_files

    name = dataset_name(n)
    args = [str(Path(sys.executable).with_name("kgrag")), "prepare", "--dataset", name, "--triples", str(triples),
            *[a for q in question_files() for a in ("--questions", str(q))]]
    if not store:
        args.append("--no-store")
    _, seconds, rss = timed_child(args, work)
    manifest = json.loads((work / name / "manifest.json").read_text())
    graph, stored, questions = (manifest[k]["result"] for k in ("graph", "store", "questions"))
    read = graph["triples"] + graph["duplicates_dropped"] + graph.get("name_triples", 0)
    out = {"prepare_s": round(seconds, 1), "prepare_peak_rss_gb": round(rss, 2),
           "graph_s": graph.get("graph_seconds"), "triples_read": read,
           "import_triples_per_s": round(read / graph["graph_seconds"]) if graph.get("graph_seconds") else None,
           "entities": graph["entities"], "triples": graph["triples"], "relations": graph["relations"],
           "map_gb": round((work / name / "graph.npz").stat().st_size / 2**30, 3),
           "questions": questions["questions"], "unresolved_topic": questions["unresolved_topic"]}
    if stored.get("seconds"):
        out["store_load_s"] = stored["seconds"]
        out["store_triples_per_s"] = round(stored["store_triples"] / stored["seconds"])
    return out


def child_graph(path: str, out: str) -> dict:
    """In a child process: the import's graph step alone (read → CSR → mapped ``graph.npz``), timed per part."""
    from kgrag.data.triples import read_triple_files
    from kgrag.graph.imported import imported_csr

    started = time.perf_counter()
    arrays = read_triple_files([path])
    read_s = time.perf_counter() - started
    lines = len(arrays.head) + arrays.name_triples
    graph = imported_csr(arrays, "haystack", "http://example.org/kgrag/haystack/ns/", "en")
    csr_s = time.perf_counter() - started - read_s
    graph.save(Path(out))
    total = time.perf_counter() - started
    return {"triples_read": lines, "read_s": round(read_s, 1), "csr_s": round(csr_s, 1),
            "save_s": round(total - read_s - csr_s, 1), "seconds": round(total, 1),
            "triples_per_s": round(lines / total), "map_gb": round(Path(out).stat().st_size / 2**30, 3)}


def child_train(name: str) -> dict:
    """In a child process: train the retriever and the reasoner at make run's budget; validation figures."""
    from flows.retriever_eval import retriever_eval
    from flows.train_gflownet import train_gflownet
    from flows.train_retriever import train_retriever
    from kgrag.main_job.parts import RUN_GFLOWNET_CONFIG, RUN_RETRIEVER_CONFIG

    started = time.perf_counter()
    train_retriever(dataset=name, config=RUN_RETRIEVER_CONFIG)
    retriever_s = time.perf_counter() - started
    retriever_eval(dataset=name, run_all_splits=True, split="validation")
    trained = train_gflownet(dataset=name, config=RUN_GFLOWNET_CONFIG)
    report = trained["validation"]["report"]
    return {"retriever_s": round(retriever_s, 1), "train_s": round(time.perf_counter() - started, 1),
            "validation": {hop: {"n": int(r["n"]), **{k: round(100 * float(r[k]), 2) for k in ("hits@1", "hit", "f1")}}
                           for hop, r in report.items()}}


def _rss() -> dict:
    """This process's resident memory from /proc: private (anon) and file-backed (mapped, shareable) pages."""
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "RssAnon", "RssFile", "VmHWM"):
            fields[key] = round(int(value.split()[0]) / 2**20, 3)
    return fields


def _validation_sample(name: str, count: int, seed: int = 0) -> list:
    from kgrag.config import get_settings
    from kgrag.hrag.retrieval.questions import prepared_questions

    questions = prepared_questions(get_settings().dataset_dir(name), ["validation"])
    if count and count < len(questions):  # a prefix of one seeded order: smaller samples nest in larger ones
        pick = np.sort(np.random.default_rng(seed).permutation(len(questions))[:count])
        questions = [questions[i] for i in pick]
    return questions


def child_answer(name: str, timed: int) -> dict:
    """In a child process: load the reasoner, answer ``timed`` validation questions one at a time (warm pass,
    then timed pass); latency, stage split, local PPR alone, RSS."""
    from kgrag.config import get_settings
    from kgrag.hrag.online.reasoner import HRAGReasoner

    started = time.perf_counter()
    reasoner = HRAGReasoner.load(get_settings(), name)
    load_s = time.perf_counter() - started
    questions = _validation_sample(name, timed)
    cfg = reasoner.retriever.config
    for q in questions:  # warm: vectors of the entities these subgraphs touch, caches, pages
        reasoner.answer(q.text, q.topics)
    totals, stages, ppr_ms, push_ms, work = [], {}, [], [], []
    for q in questions:
        answer = reasoner.answer(q.text, q.topics)
        totals.append(answer.ms["total"])
        for k, v in answer.ms.items():
            stages.setdefault(k, []).append(v)
        t = time.perf_counter()
        reasoner.ppr.push(q.topics)
        push_ms.append(1000 * (time.perf_counter() - t))
        work.append(reasoner.ppr.last_work)
        t = time.perf_counter()
        reasoner.ppr.retrieval_subgraph(q.topics, cfg.top_n, cfg.max_triples)
        ppr_ms.append(1000 * (time.perf_counter() - t))
    return {"load_s": round(load_s, 2), "n": len(questions), "answer_question_ms": ms_percentiles(totals),
            "stages_p50_ms": {k: round(float(np.median(v)), 2) for k, v in stages.items()},
            "push_ms": ms_percentiles(push_ms), "g_retrieval_ms": ms_percentiles(ppr_ms), "push_edges": ms_percentiles(work), "rss_gb": _rss(),
            "vectors_computed": reasoner.retriever.text.entities.computed()}


def child_eval(name: str, count: int) -> dict:
    """In a child process: Hits@1 / Hit / F1 per hop of the trained chain on a seeded validation sample (the same
    questions at every size), through ``HRAGReasoner.rank`` (what ``kgrag eval`` runs)."""
    from kgrag.config import get_settings
    from kgrag.hrag.gflownet.answers import answer_metrics, summarise
    from kgrag.hrag.online.reasoner import HRAGReasoner

    reasoner = HRAGReasoner.load(get_settings(), name)
    questions = _validation_sample(name, count)
    started = time.perf_counter()
    ranked = []
    for start in range(0, len(questions), 256):
        ranked += reasoner.rank(questions[start : start + 256]).ranked
    metrics = answer_metrics(ranked, [set(q.answers) for q in questions], reasoner.policy.threshold)
    report = summarise(metrics, [q.hop for q in questions])
    return {"seconds": round(time.perf_counter() - started, 1), "retriever": str(reasoner.retriever.checkpoint),
            "validation_sample": {hop: {"n": int(r["n"]), **{k: round(100 * float(r[k]), 2)
                                                            for k in ("hits@1", "hit", "f1")}}
                                  for hop, r in report.items()}}


def borrow_checkpoints(name: str, source: str, work: Path) -> None:
    """Point ``name``'s latest retriever and reasoner at ``source``'s (the chain trained on another size)."""
    from kgrag.config import get_settings
    from kgrag.hrag.retrieval.pipeline import record_latest
    from kgrag.hrag.retrieval.stage_inputs import load_graph

    settings = get_settings().model_copy(update={"work_dir": work})

    if load_graph(settings, name).relations != load_graph(settings, source).relations:
        raise SystemExit(f"{name} and {source} differ in relations: {source}'s chain cannot answer on {name}")
    for kind in ("retriever", "gflownet"):
        pointer = settings.checkpoint_dir / kind / f"{source}-latest.json"
        record_latest(settings, name, Path(json.loads(pointer.read_text())["run_dir"]), kind)


def _answer_shard(work: str, name: str, count: int, shard: int, shards: int) -> dict:
    """A Dask task: open the reasoner (maps the graph) and rank a shard of the validation sample."""
    os.environ["KGRAG_WORK_DIR"] = work
    from kgrag.config import get_settings

    get_settings.cache_clear()
    from kgrag.hrag.gflownet.answers import answer_metrics
    from kgrag.hrag.online.reasoner import HRAGReasoner

    reasoner = HRAGReasoner.load(get_settings(), name)
    questions = _validation_sample(name, count)[shard::shards]
    started = time.perf_counter()
    ranked = reasoner.rank(questions).ranked
    metrics = answer_metrics(ranked, [set(q.answers) for q in questions], reasoner.policy.threshold)
    return {"n": len(questions), "hits@1": float(np.sum(metrics["hits@1"])), "seconds": time.perf_counter() - started,
            "rss_gb": _rss(), "pid": os.getpid()}


def child_dask(name: str, count: int) -> dict:
    """Two Dask workers answer halves of the validation sample; one worker the whole of it (the ratio)."""
    from dask.distributed import Client, LocalCluster

    work = os.environ["KGRAG_WORK_DIR"]
    out = {}
    for workers in (1, 2):
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
                Client(cluster) as client:
            started = time.perf_counter()
            futures = [client.submit(_answer_shard, work, name, count, k, workers, pure=False) for k in range(workers)]
            parts = client.gather(futures)
            out[f"{workers}_workers"] = {"wall_s": round(time.perf_counter() - started, 1),
                                         "n": sum(p["n"] for p in parts),
                                         "hits@1": round(100 * sum(p["hits@1"] for p in parts) / max(1, sum(p["n"] for p in parts)), 2),
                                         "rss_gb_per_worker": [p["rss_gb"] for p in parts]}
    out["speedup_2_vs_1"] = round(out["1_workers"]["wall_s"] / out["2_workers"]["wall_s"], 2)
    return out


def run_child(mode: str, name: str, work: Path, *extra: str) -> tuple[dict, float, float]:
    stdout, seconds, rss = timed_child([sys.executable, "-m", "bench.haystack", "--child", mode, "--name", name,
                                        *extra], work)
    return json.loads(stdout.strip().splitlines()[-1]), seconds, rss


def run_size(n: int, args: argparse.Namespace, previous: dict | None = None) -> dict:
    data, work = bench_dirs()
    name = dataset_name(n)
    console.rule(f"{name}: MetaQA + {n:,} synthetic triples")
    row: dict = {"n_synthetic": n}
    t = time.perf_counter()
    row["generate"] = generate_file(n, data, args.seed)
    row["generate"]["wall_s"] = round(time.perf_counter() - t, 1)
    console.print(f"generated {row['generate']['triples_total']:,} lines in {row['generate']['wall_s']} s")
    if previous and "import" in previous and (work / name / "graph.npz").is_file():
        row["import"] = previous["import"]  # measured by an earlier run (a re-run of prepare is a no-op)
    else:
        row["import"] = import_size(n, Path(row["generate"]["path"]), work, store=n <= args.store_up_to)
    console.print(row["import"])
    if args.graph_step:  # the import's graph step alone, in its own process (for a rate on a quiet machine)
        out = work / ".graph-step" / f"{name}.npz"
        out.parent.mkdir(parents=True, exist_ok=True)
        stdout, _, rss = timed_child([sys.executable, "-m", "bench.haystack", "--child", "graph", "--name",
                                      row["generate"]["path"], "--out", str(out)], work)
        row["graph_step"] = {**json.loads(stdout.strip().splitlines()[-1]), "peak_rss_gb": round(rss, 2)}
        out.unlink()
        console.print(row["graph_step"])
        return row
    if args.import_only:
        return row
    if args.train_from:
        borrow_checkpoints(name, args.train_from, work)
        row["trained_on"] = args.train_from
    elif not args.skip_train:
        row["train"], seconds, rss = run_child("train", name, work)
        row["train"].update(wall_s=round(seconds, 1), peak_rss_gb=round(rss, 2))
        console.print(row["train"])
    if args.eval_questions:
        row["eval"], seconds, rss = run_child("eval", name, work, "--timed", str(args.eval_questions))
        row["eval"].update(wall_s=round(seconds, 1), peak_rss_gb=round(rss, 2))
        console.print(row["eval"])
    row["answer"], _, rss = run_child("answer", name, work, "--timed", str(args.timed))
    row["answer"]["peak_rss_gb"] = round(rss, 2)
    console.print(row["answer"])
    if args.dask and n == max(args.sizes):
        row["dask"], _, _ = run_child("dask", name, work, "--timed", str(args.dask_questions))
        console.print(row["dask"])
    return row


def summary_table(rows: dict) -> None:
    table = Table(title="MetaQA in a haystack (validation; baseline hay0 = MetaQA alone, same path)")
    for col in ("dataset", "triples", "import tr/s", "peak RSS GB", "map GB", "Hits@1 1/2/3-hop", "F1 all",
                "answer p50 ms", "push p50 ms", "reasoner RSS GB"):
        table.add_column(col, justify="right")
    for name, row in rows.items():
        imp, ans, val = row.get("import", {}), row.get("answer", {}), row.get("train", {}).get("validation", {})
        hits = "/".join(f"{val[f'{h}-hop']['hits@1']:.1f}" for h in HOPS if f"{h}-hop" in val)
        table.add_row(name, f"{imp.get('triples', 0):,}", f"{imp.get('import_triples_per_s') or 0:,}",
                      str(imp.get("prepare_peak_rss_gb")), str(imp.get("map_gb")), hits,
                      str(val.get("all", {}).get("f1", "")), str(ans.get("answer_question_ms", {}).get("p50")),
                      str(ans.get("push_ms", {}).get("p50")), str(ans.get("rss_gb", {}).get("VmRSS")))
    console.print(table)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="0,1000000,10000000,50000000")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timed", type=int, default=200)
    parser.add_argument("--store-up-to", type=int, default=10_000_000)
    parser.add_argument("--skip-train", action="store_true", help="answer with the checkpoints already trained")
    parser.add_argument("--import-only", action="store_true", help="generate and import, nothing more")
    parser.add_argument("--graph-step", action="store_true", help="time the import's graph step alone (read, CSR, "
                        "save) in its own process, and nothing more")
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--train-from", default=None, help="answer with the chain trained on this dataset "
                        "(e.g. hay1m) instead of training on each size")
    parser.add_argument("--eval-questions", type=int, default=0, help="a seeded validation sample answered "
                        "through the reasoner at every size (0: only the training run's full validation report)")
    parser.add_argument("--dask", action="store_true", help="the two-worker run on the largest size")
    parser.add_argument("--dask-questions", type=int, default=600)
    parser.add_argument("--child", choices=["train", "answer", "dask", "eval", "graph"], help=argparse.SUPPRESS)
    parser.add_argument("--name", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        result = {"train": lambda: child_train(args.name), "answer": lambda: child_answer(args.name, args.timed),
                  "dask": lambda: child_dask(args.name, args.timed),
                  "eval": lambda: child_eval(args.name, args.timed),
                  "graph": lambda: child_graph(args.name, args.out)}[args.child]()
        print(json.dumps(result))
        return
    args.sizes = [int(s) for s in args.sizes.split(",")]
    for n in args.sizes:
        row = run_size(n, args, _rows().get(dataset_name(n)))
        rows = _rows()  # merged as written now: another size may have been run meanwhile
        rows[dataset_name(n)] = {**rows.get(dataset_name(n), {}), **row}  # stages not run now are kept
        _write(rows)
    summary_table(_rows())


def _rows() -> dict:
    previous = RESULTS / "haystack.json"
    return json.loads(previous.read_text())["figures"]["sizes"] if previous.is_file() else {}


def _write(rows: dict) -> None:
    base = rows.get("hay0")
    ratio = {}
    if base and "answer" in base:
        for name, row in rows.items():
            if "answer" in row:
                ratio[name] = {"answer_p50_vs_alone": round(row["answer"]["answer_question_ms"]["p50"]
                                                            / base["answer"]["answer_question_ms"]["p50"], 3)}
                if "train" in row and "train" in base:
                    ratio[name]["hits@1_points_vs_alone"] = {
                        hop: round(row["train"]["validation"][hop]["hits@1"] - base["train"]["validation"][hop]["hits@1"], 2)
                        for hop in base["train"]["validation"] if hop in row["train"]["validation"]}
    n = int(base["train"]["validation"]["all"]["n"]) if base and "train" in base else 0
    write_result("haystack", {"sizes": rows}, baseline={"dataset": "hay0 (MetaQA alone, same import and budget)"},
                 ratio=ratio, split="validation (seeded 10% of MetaQA dev)", n=n)


if __name__ == "__main__":
    main()

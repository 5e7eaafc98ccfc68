"""The first answer in seconds (issue 43 §2): whole-process wall of one-shot commands and a fresh server's first
questions, for this tree and a baseline tree (an earlier commit, checked out with ``git worktree``) in the same run,
runs alternating between the trees.

Cases (every command is ``python -m kgrag.cli …`` with the tree first on ``PYTHONPATH``; the work dir, the network
database and the ONNX export are shared, prepared once before timing):
- ``ask_kg``: ``kgrag ask "<q>" --kg demo`` (the demo KG prepared, no trained reasoner);
- ``ask_kn``: ``kgrag ask "Who wrote 1984?" --kn library`` (``examples/library`` loaded into a SQLite file);
- ``prepare_rerun``: ``kgrag prepare --dataset demo`` with nothing changed;
- ``serve_first``: ``kgrag serve`` started; once ``/healthz`` says warm, the first ``/agent/ask`` on the demo KG and
  on the library network, against the median of the next five (the target: first ≤ 2× warm);
- ``--medical-db URL`` adds ``context_fresh``: ``kgrag serve --workers 2`` on the medical network, timed from the
  moment every worker says warm, 8 clients posting held-out patient questions (the last 20 % of
  ``medical/questions_cypher_train.json``, seeded shuffle) to ``context_search`` for 15 s, then other questions
  for the next 15 s (a server with nothing left to warm gives the same in both windows).
Figures: min and median wall seconds per case and tree, the ratio baseline / this tree.
Run: ``python -m bench.first_answer [--runs 5] [--baseline-rev d64100d] [--medical-db sqlite:///…]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from rich.console import Console
from rich.table import Table

from bench.common import held_out_patient_questions, write_result
from bench.http_load import http_load, start_server, stop_server

ROOT = Path(__file__).resolve().parents[1]
LIBRARY = ROOT / "examples" / "library" / "library.yaml"
KG_QUESTION = "in which country was Ines Kamau born?"
KN_QUESTION = "Who wrote 1984?"
console = Console(stderr=True)


def _env(tree: Path, work: Path, db: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(tree), "KGRAG_WORK_DIR": str(work), "KGRAG_DATABASE_URL": db,
            "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
            "PREFECT_LOGGING_LEVEL": "WARNING", "KGRAG_LLM_BASE_URL": ""}


def _serve_env(tree: Path, work: Path) -> dict[str, str]:
    """The environment of a ``kgrag serve`` on ``tree`` (:func:`bench.http_load.start_server` sets the database)."""
    return {k: v for k, v in _env(tree, work, "").items() if k != "KGRAG_DATABASE_URL"}


def _cli(tree: Path, work: Path, db: str, *args: str, timeout: float = 600) -> float:
    """Wall seconds of one ``python -m kgrag.cli ARGS`` process (it must succeed)."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "kgrag.cli", *args], env=_env(tree, work, db), cwd=tree,
                          capture_output=True, text=True, timeout=timeout)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed in {tree}: {done.stdout[-1500:]}{done.stderr[-1500:]}")
    return elapsed


def _serve_first(tree: Path, work: Path, db: str) -> dict[str, float]:
    """A fresh ``kgrag serve``: seconds until warm, then the first and the warm median question per target."""
    env = _serve_env(tree, work)
    started = time.perf_counter()
    proc, base = start_server(db, 1, env=env)
    out: dict[str, float] = {"until_warm_s": round(time.perf_counter() - started, 2)}
    try:
        with httpx.Client(base_url=base, timeout=120) as http:
            for name, body in (("kg", {"question": KG_QUESTION, "kg": "demo"}),
                               ("kn", {"question": KN_QUESTION, "kn_id": "library"})):
                times = []
                for _ in range(6):
                    t = time.perf_counter()
                    r = http.post("/agent/ask", json=body)
                    times.append(time.perf_counter() - t)
                    r.raise_for_status()
                out[f"{name}_first_ms"] = round(times[0] * 1000, 1)
                out[f"{name}_warm_ms"] = round(statistics.median(times[1:]) * 1000, 1)
                out[f"{name}_first_over_warm"] = round(times[0] / statistics.median(times[1:]), 2)
    finally:
        stop_server(proc)
    return out


def _context_fresh(tree: Path, work: Path, db: str, data_dir: Path) -> dict:
    env = _serve_env(tree, work)
    started = time.perf_counter()
    proc, base = start_server(db, 2, env=env)
    until_warm = time.perf_counter() - started
    try:
        questions = held_out_patient_questions(data_dir)
        path = "/api/agent-retrieval/in/v1/kn/context_search"
        first = http_load(base, path, [{"query": q, "kn_id": "medical"} for q in questions[:200]], clients=8,
                          seconds=15, cycle=True)
        later = http_load(base, path, [{"query": q, "kn_id": "medical"} for q in questions[200:]], clients=8,
                          seconds=15, cycle=True)  # the next 15 s, new questions: what a warm server gives
    finally:
        stop_server(proc)
    keys = ("requests_per_s", "p50_ms", "p95_ms", "errors", "dropped")
    return {"until_warm_s": round(until_warm, 1), **{k: first[k] for k in keys},
            "next_15s": {k: later[k] for k in keys}}


def _baseline_tree(rev: str) -> Path:
    path = Path(tempfile.mkdtemp(prefix="kgrag-baseline-")) / "tree"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(path), rev], check=True,
                   capture_output=True)
    return path


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--baseline-rev", default="d64100d", help="the commit to compare against")
    parser.add_argument("--medical-db", default=None, help="a database holding the loaded medical network")
    args = parser.parse_args(argv)

    baseline = _baseline_tree(args.baseline_rev)
    trees = {"this": ROOT, "baseline": baseline}
    scratch = Path(tempfile.mkdtemp(prefix="kgrag-first-answer-"))
    work, db = scratch / "work", f"sqlite:///{scratch / 'kn.db'}"
    console.print("[bold]setup[/]: prepare demo, load the library network (this tree)")
    _cli(ROOT, work, db, "prepare", "--dataset", "demo")
    _cli(ROOT, work, db, "kn", "load", str(LIBRARY), "--db", db)
    for tree in trees.values():  # first-use costs (ONNX export, embedding cache) paid before timing
        _cli(tree, work, db, "ask", KG_QUESTION, "--kg", "demo")
        _cli(tree, work, db, "ask", KN_QUESTION, "--kn", "library")

    cases = {
        "ask_kg": ("ask", KG_QUESTION, "--kg", "demo"),
        "ask_kn": ("ask", KN_QUESTION, "--kn", "library"),
        "prepare_rerun": ("prepare", "--dataset", "demo"),
    }
    walls: dict[str, dict[str, list[float]]] = {case: {t: [] for t in trees} for case in cases}
    for run in range(args.runs):
        for case, cli_args in cases.items():
            for name, tree in trees.items():
                walls[case][name].append(_cli(tree, work, db, *cli_args))
        console.print(f"run {run + 1}/{args.runs}: " + ", ".join(
            f"{case} {walls[case]['this'][-1]:.2f}/{walls[case]['baseline'][-1]:.2f} s" for case in cases))

    figures: dict = {}
    base_figures: dict = {}
    for case in cases:
        for name, target in (("this", figures), ("baseline", base_figures)):
            target[case] = {"min_s": round(min(walls[case][name]), 2),
                            "median_s": round(statistics.median(walls[case][name]), 2)}
    console.print("[bold]serve_first[/]: a fresh server per tree")
    figures["serve_first"] = _serve_first(ROOT, work, db)
    base_figures["serve_first"] = _serve_first(baseline, work, db)
    if args.medical_db:
        data_dir = Path(os.environ.get("KGRAG_DATA_DIR") or ROOT.parent / "shared" / "data")
        console.print("[bold]context_fresh[/]: kgrag serve --workers 2 on the medical network, from warm")
        figures["context_fresh"] = _context_fresh(ROOT, work, args.medical_db, data_dir)
        base_figures["context_fresh"] = _context_fresh(baseline, work, args.medical_db, data_dir)
    ratio = {case: round(base_figures[case]["median_s"] / figures[case]["median_s"], 2) for case in cases}

    table = Table("case", "this min / median s", "baseline min / median s", "baseline / this", title="first answer")
    for case in cases:
        table.add_row(case, f"{figures[case]['min_s']} / {figures[case]['median_s']}",
                      f"{base_figures[case]['min_s']} / {base_figures[case]['median_s']}", f"{ratio[case]}×")
    for key in ("kg", "kn"):
        this, base = figures["serve_first"], base_figures["serve_first"]
        table.add_row(f"serve first / warm ({key})", f"{this[f'{key}_first_ms']} / {this[f'{key}_warm_ms']} ms",
                      f"{base[f'{key}_first_ms']} / {base[f'{key}_warm_ms']} ms", "")
    if "context_fresh" in figures:
        this, base = figures["context_fresh"], base_figures["context_fresh"]
        for label, a, b in (("context_search, first 15 s from warm", this, base),
                            ("context_search, next 15 s", this["next_15s"], base["next_15s"])):
            table.add_row(label, f"{a['requests_per_s']} req/s, p95 {a['p95_ms']:.0f} ms",
                          f"{b['requests_per_s']} req/s, p95 {b['p95_ms']:.0f} ms", "")
    Console().print(table)
    write_result("first_answer", figures, base_figures, ratio,
                 split=f"{args.runs} runs per case and tree; baseline {args.baseline_rev}", n=args.runs)
    subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(baseline)], capture_output=True)


if __name__ == "__main__":
    main()

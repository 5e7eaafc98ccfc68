"""Real human questions over databases the plan scorer never trained on: the rules against the learned scorer, in
the same run, on Spider's databases as networks — and, optionally, the same questions through the served agent.

    HF_HUB_OFFLINE=1 .venv/bin/python -m bench.real_questions [--held-out] [--agent N] [--limit-dbs N] [--rdf]

Contract: the split is **not** recomputed — the databases of each set are read from the shipped scorer's
``meta.json`` (``meta["split"]["train" | "validation" | "held_out"]``, its seed printed beside them), under
``get_settings().data_dir / "spider_train"``. The two scorers are :func:`kgrag.reading.scorer.load_scorer` with
``rules_only=True`` (the rules with the shipped rules calibrator: the **baseline**) and ``load_scorer()`` (the
learned one: the **figures**); both score the very same candidates (:func:`kgrag.reading.train.examples_of`,
built once per set) through :func:`kgrag.reading.train.evaluate_scorer`. Sets: (a) the spider_train
**validation** databases (the learned scorer's confidence was calibrated on them, its ranking never trained on
them); (b) the 5 Spider **dev** databases of ``data_dir / "spider"`` (never seen by training or calibration);
(c) only with ``--held-out``: the **held-out** databases — the one-time figure, said loudly; and a ``train`` line
(F1 only, for reference: the databases the model learned from). Per set and scorer: n (questions; the
denominator of every figure), F1, Hit, exact, F1 by kind, F1 by database (and its minimum over databases), the
calibration of the pick's confidence (:func:`~kgrag.reading.train.calibration_table`: ECE, right / wrong at ≥ 0.8,
risk–coverage), the lowest confidence at which the answers given are right ≥ 90 % on that set
(:func:`~kgrag.reading.train.threshold_for`) with the coverage it leaves, and the learned scorer's shipped
threshold (fitted on validation, ``meta["figures"]["min_confidence_for_90"]``) applied to the set.

``--agent N``: the first N questions of each Spider dev database through the served path, as a user would type
it — in a temp ``KGRAG_WORK_DIR`` (own SQLite store), ``kgrag kn load <db>/<db>.yaml`` then ``kgrag agent-eval
--kn <db> --questions <db>/questions.jsonl --json --limit N``, each a subprocess; its JSON last line is parsed and
set beside the in-process learned scorer's F1 on the same N questions. ``--limit-dbs N``: only the first N
databases (sorted) of each set — a quick run, not a figure. ``--rdf``: each set's databases also as **triple KGs**
(:mod:`bench.network_rdf`: written as Turtle, imported as ``kgrag prepare --triples`` imports, viewed through
:mod:`kgrag.reading.graph_tables`) and the same questions measured on them (sets ``<set>_rdf``; the one scorer for
both kinds of graph). Writes ``bench/results/real_questions.json``
(:func:`bench.common.write_result`; ratio = learned / rules F1 per set).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table
from threadpoolctl import threadpool_limits

from bench.common import write_result

console = Console(width=150)
ROOT = Path(__file__).resolve().parents[1]
TARGET = 0.9
SETS_HELP = {"validation": "spider_train validation databases (from meta.json)",
             "spider_dev": "Spider dev databases (data_dir/spider, never trained or calibrated on)",
             "held_out": "spider_train held-out databases (from meta.json; the one-time figure)",
             "train": "spider_train train databases (from meta.json; reference only)"}


def progress(message: str) -> None:
    console.print(f"[bench.real_questions] {message}", highlight=False, markup=False)


def _summary(result: dict[str, Any], shipped_threshold: float | None) -> dict[str, Any]:
    """The figures of one scorer on one set (every share over ``n`` questions)."""
    from kgrag.reading.train import calibration_table, threshold_for

    conf = np.asarray(result["confidences"], dtype=float)
    right = np.asarray(result["correct"], dtype=float)
    by_db = result["by_db"]
    t = threshold_for(conf, right, TARGET)
    kept = conf >= t
    reached = bool(kept.sum() >= 10 and right[kept].mean() >= TARGET)
    out: dict[str, Any] = {
        "n": result["n"], "n_databases": len(by_db), "f1": result["f1"], "hit": result["hit"],
        "exact": result["exact"], "by_kind": result["by_kind"], "by_db": by_db,
        "min_db_f1": min(by_db.values()) if by_db else None,
        "min_db": min(by_db, key=by_db.get) if by_db else None,
        "calibration": calibration_table(conf, right),
        "threshold_for_90": {"threshold": t, "reached": reached, "answered": int(kept.sum()),
                             "coverage": round(float(kept.mean()), 4) if len(conf) else 0.0,
                             "accuracy": round(float(right[kept].mean()), 4) if kept.any() else None},
    }
    if shipped_threshold is not None:
        kept = conf >= shipped_threshold
        out["at_shipped_threshold"] = {"threshold": shipped_threshold, "answered": int(kept.sum()),
                                       "coverage": round(float(kept.mean()), 4) if len(conf) else 0.0,
                                       "accuracy": round(float(right[kept].mean()), 4) if kept.any() else None}
    return out


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value:.4f}"


def print_set(name: str, split: str, rules: dict[str, Any], learned: dict[str, Any]) -> None:
    table = Table(title=f"{name}: {split} — {learned['n_databases']} databases, n = {learned['n']} questions "
                        "(every share over n)", show_header=True, header_style="bold",
                  caption="right@0.8: exact among answers at confidence ≥ 0.8; wrong@0.8: share of the wrong picks "
                          "given at ≥ 0.8; t→90%: lowest confidence where answers given are ≥ 90 % exact (≥ 10 "
                          "answered; (no): never reached, 0.95 shown); cov./acc. at t: share answered, exact among them")
    for col in ("scorer", "n", "F1", "Hit", "exact", "min db F1", "ECE", "right@0.8", "wrong@0.8",
                "answered@0.8", "t→90%", "cov. at t", "acc. at t"):
        table.add_column(col, justify="left" if col == "scorer" else "right")
    for label, fig in (("rules", rules), ("learned", learned)):
        cal, thr = fig["calibration"], fig["threshold_for_90"]
        table.add_row(label, str(fig["n"]), _pct(fig["f1"]), _pct(fig["hit"]), _pct(fig["exact"]),
                      _pct(fig["min_db_f1"]), _pct(cal.get("ece")),
                      _pct(cal.get("right_at_0.8")), _pct(cal.get("wrong_at_0.8")), _pct(cal.get("answered_at_0.8")),
                      f"{thr['threshold']:.2f}" + ("" if thr["reached"] else " (no)"),
                      _pct(thr["coverage"]), _pct(thr["accuracy"]))
    console.print(table)
    if "at_shipped_threshold" in learned:
        s = learned["at_shipped_threshold"]
        console.print(f"  learned, at the shipped threshold {s['threshold']:.2f} (fitted on validation): answers "
                      f"{s['answered']}/{learned['n']} (coverage {_pct(s['coverage'])}), right {_pct(s['accuracy'])}",
                      highlight=False)
    kinds = Table(title=f"{name}: F1 by kind (n per kind)", show_header=True, header_style="bold")
    for col in ("kind", "n", "rules F1", "learned F1"):
        kinds.add_column(col, justify="left" if col == "kind" else "right")
    for kind in sorted(learned["by_kind"]):
        kinds.add_row(kind, str(learned["n_by_kind"].get(kind, "")), _pct(rules["by_kind"].get(kind)),
                      _pct(learned["by_kind"][kind]))
    dbs = Table(title=f"{name}: F1 by database (n per database)", show_header=True, header_style="bold")
    for col in ("database", "n", "rules F1", "learned F1"):
        dbs.add_column(col, justify="left" if col == "database" else "right")
    for db in sorted(learned["by_db"]):
        low = [who for who, fig in (("rules", rules), ("learned", learned)) if fig["min_db"] == db]
        dbs.add_row(db + (f" (min: {', '.join(low)})" if low else ""), str(learned["n_by_db"].get(db, "")),
                    _pct(rules["by_db"].get(db)), _pct(learned["by_db"][db]))
    console.print(kinds)
    console.print(dbs)
    rc = Table(title=f"{name}: risk–coverage of the pick's confidence (accuracy = exact among those answered)",
               show_header=True, header_style="bold")
    for col in ("threshold", "rules coverage", "rules accuracy", "learned coverage", "learned accuracy"):
        rc.add_column(col, justify="right")
    for r_row, l_row in zip(rules["calibration"].get("risk_coverage", []),
                            learned["calibration"].get("risk_coverage", []), strict=True):
        rc.add_row(f"{l_row['threshold']:.2f}", _pct(r_row["coverage"]), _pct(r_row["accuracy"]),
                   _pct(l_row["coverage"]), _pct(l_row["accuracy"]))
    console.print(rc)


def measure_set(name: str, dbs: list[Any], rules_scorer: Any, learned_scorer: Any,
                shipped_threshold: float | None) -> tuple[dict[str, Any], dict[str, Any], list[Any], list[float]]:
    """Both scorers on the same candidates of ``dbs``: (rules figures, learned figures, examples, learned F1s)."""
    from kgrag.reading.train import evaluate_scorer, examples_of

    t0 = time.perf_counter()
    examples = examples_of(dbs)
    built = time.perf_counter() - t0
    # one thread: the model's OpenMP pool spin-waits badly beside another busy process on a small machine
    with threadpool_limits(limits=1):
        res_rules = evaluate_scorer(examples, rules_scorer)
        res_learned = evaluate_scorer(examples, learned_scorer)
    progress(f"{name}: {len(dbs)} databases, {len(examples)} questions; candidates built in {built:.1f} s, "
             f"scored in {time.perf_counter() - t0 - built:.1f} s")
    n_by_kind = {k: sum(1 for e in examples if e.kind == k) for k in sorted({e.kind for e in examples})}
    n_by_db = {d: sum(1 for e in examples if e.db_id == d) for d in sorted({e.db_id for e in examples})}
    rules = _summary(res_rules, None) | {"n_by_kind": n_by_kind, "n_by_db": n_by_db, "seconds": round(built, 1)}
    learned = _summary(res_learned, shipped_threshold) | {"n_by_kind": n_by_kind, "n_by_db": n_by_db,
                                                          "seconds": round(built, 1)}
    return rules, learned, examples, list(res_learned["f1s"])


def _cli(args: list[str], env: dict[str, str], timeout: float = 600) -> tuple[int, str, float]:
    """``kgrag <args>`` in its own process: (return code, its output, seconds)."""
    exe = ROOT / ".venv" / "bin" / "kgrag"
    cmd = [str(exe), *args] if exe.is_file() else [sys.executable, "-m", "kgrag.cli", *args]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env, timeout=timeout, check=False)
    return done.returncode, done.stdout + done.stderr, time.perf_counter() - t0


def _last_json(output: str) -> dict[str, Any] | None:
    for line in reversed(output.splitlines()):
        line = line.strip()
        if line.startswith("{") and line.endswith("}"):
            try:
                return json.loads(line)
            except ValueError:
                continue
    return None


def agent_path(dev_root: Path, dev_ids: list[str], limit: int, examples: list[Any],
               learned_f1s: list[float]) -> dict[str, Any]:
    """The first ``limit`` questions of each dev database through ``kgrag kn load`` + ``kgrag agent-eval``."""
    per_db: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="kgrag-real-questions-") as work:
        env = os.environ.copy()
        env.pop("KGRAG_DATABASE_URL", None)  # the temp work dir's own SQLite store
        env.update(KGRAG_WORK_DIR=work, HF_HUB_OFFLINE="1")
        for db in dev_ids:
            folder = dev_root / db
            rc, out, load_s = _cli(["kn", "load", str(folder / f"{db}.yaml")], env)
            if rc != 0:
                per_db[db] = {"ok": False, "step": "kn load", "error": out.strip().splitlines()[-1:]}
                progress(f"agent: {db}: kn load failed: {per_db[db]['error']}")
                continue
            rc, out, eval_s = _cli(["agent-eval", "--kn", db, "--questions", str(folder / "questions.jsonl"),
                                    "--json", "--limit", str(limit)], env)
            figures = _last_json(out)
            if rc != 0 or figures is None:
                per_db[db] = {"ok": False, "step": "agent-eval", "error": out.strip().splitlines()[-3:]}
                progress(f"agent: {db}: agent-eval failed: {per_db[db]['error']}")
                continue
            # the in-process learned scorer on the same questions (agent-eval skips questions without answers)
            same = [f for e, f in zip(examples, learned_f1s, strict=True) if e.db_id == db and e.gold][:limit]
            per_db[db] = {"ok": True, "n": figures.get("n"), "f1": figures.get("f1"), "hit": figures.get("hit"),
                          "exact": figures.get("exact"), "p50_ms": figures.get("p50_ms"),
                          "in_process_n": len(same), "in_process_f1": round(float(np.mean(same)), 4) if same else None,
                          "load_s": round(load_s, 1), "eval_s": round(eval_s, 1)}
            progress(f"agent: {db}: kn load {load_s:.1f} s, agent-eval {eval_s:.1f} s: {figures}")
    ok = [v for v in per_db.values() if v.get("ok")]
    n = sum(v["n"] for v in ok)
    n_in = sum(v["in_process_n"] for v in ok)
    overall = {
        "n": n, "databases_ok": len(ok), "databases": len(per_db),
        "f1": round(sum(v["f1"] * v["n"] for v in ok) / n, 4) if n else None,
        "hit": round(sum(v["hit"] * v["n"] for v in ok) / n, 4) if n else None,
        "in_process_n": n_in,
        "in_process_f1": round(sum(v["in_process_f1"] * v["in_process_n"] for v in ok if v["in_process_n"]) / n_in, 4)
        if n_in else None,
        "seconds": round(sum(v.get("load_s", 0) + v.get("eval_s", 0) for v in ok), 1),
    }
    table = Table(title=f"served agent path (kgrag kn load + kgrag agent-eval --limit {limit}) vs the in-process "
                        "learned scorer, same questions", show_header=True, header_style="bold")
    for col in ("database", "n", "agent F1", "agent Hit", "in-process F1", "p50 ms", "load s", "eval s"):
        table.add_column(col, justify="left" if col == "database" else "right")
    for db, v in per_db.items():
        if not v.get("ok"):
            table.add_row(db, "–", f"failed at {v['step']}", "", "", "", "", "")
            continue
        table.add_row(db, str(v["n"]), _pct(v["f1"]), _pct(v["hit"]), _pct(v["in_process_f1"]), str(v["p50_ms"]),
                      str(v["load_s"]), str(v["eval_s"]))
    table.add_row("overall", str(n), _pct(overall["f1"]), _pct(overall["hit"]), _pct(overall["in_process_f1"]),
                  "", "", str(overall["seconds"]))
    console.print(table)
    return {"per_db": per_db, "overall": overall,
            "split": f"Spider dev databases ({len(per_db)}), first {limit} questions each; n = {n}"}


def rdf_twins(root: Path, db_ids: list[str]) -> list[Any]:
    """The databases ``db_ids`` under ``root`` as triple KGs (:func:`bench.network_rdf.rdf_view`), same questions."""
    from bench.network_rdf import rdf_view
    from kgrag.network.loaders.declarative import load_declarative
    from kgrag.reading.corpus import Database, read_database

    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for db_id in db_ids:
            db = read_database(root / db_id)
            network, instances, links = load_declarative(next(iter(sorted((root / db_id).glob("*.yaml")))))
            view = rdf_view(network, instances, links, Path(tmp))
            if view is None:
                progress(f"warning: {db_id} as RDF types no entity: left out")
                continue
            out.append(Database(db_id, view, db.questions))
    return out


def main() -> None:  # noqa: PLR0915 - one linear benchmark script
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--held-out", action="store_true", help="Also measure the held-out databases (one time).")
    parser.add_argument("--agent", type=int, default=0, metavar="N",
                        help="Also run the first N questions of each Spider dev database through the agent.")
    parser.add_argument("--limit-dbs", type=int, default=0, metavar="N",
                        help="Only the first N databases of each set (a quick run, not a figure).")
    parser.add_argument("--rdf", action="store_true",
                        help="Also measure each set on its databases written as RDF and imported as triple KGs.")
    args = parser.parse_args()
    started = time.perf_counter()

    from kgrag.config import get_settings
    from kgrag.reading.corpus import read_corpus
    from kgrag.reading.scorer import LearnedScorer, load_scorer, model_folders

    data_dir = get_settings().data_dir
    train_root, dev_root = data_dir / "spider_train", data_dir / "spider"
    learned_scorer = load_scorer()
    rules_scorer = load_scorer(rules_only=True)
    if not isinstance(learned_scorer, LearnedScorer):
        raise SystemExit("no trained scorer found (load_scorer() gave the rules): nothing to compare")
    meta = learned_scorer.meta
    folder = next((f for f in model_folders() if (f / "planner.joblib").is_file()), None)
    split = meta["split"]
    seed = meta["seed"]
    shipped_threshold = meta.get("figures", {}).get("min_confidence_for_90")
    progress(f"learned scorer {learned_scorer.name} from {folder}; rules calibrated: "
             f"{rules_scorer.calibrator is not None}; seed {seed}; split from meta.json: "
             f"{len(split['train'])} train / {len(split['validation'])} validation / {len(split['held_out'])} "
             f"held-out databases; data {train_root}")
    if Path(meta.get("data", str(train_root))).name != train_root.name:
        progress(f"warning: the model was trained on {meta.get('data')}, measuring on {train_root}")

    def ids(names: list[str]) -> list[str]:
        names = sorted(names)
        return names[: args.limit_dbs] if args.limit_dbs else names

    dev_ids = ids([p.name for p in dev_root.iterdir() if (p / "questions.jsonl").is_file()])
    overlap = set(dev_ids) & set(split["train"])
    if overlap:
        progress(f"warning: Spider dev databases also in the train split: {sorted(overlap)}")
    sets: dict[str, tuple[Path, list[str]]] = {"validation": (train_root, ids(split["validation"])),
                                               "spider_dev": (dev_root, dev_ids)}
    if args.held_out:
        console.rule("[bold red]HELD-OUT DATABASES: THE ONE-TIME FIGURE — do not tune on what follows")
        progress("!!! measuring the HELD-OUT databases: this is the one-time figure; report it, never tune on it !!!")
        sets["held_out"] = (train_root, ids(split["held_out"]))

    figures: dict[str, Any] = {"seed": seed, "scorer": learned_scorer.name, "model_folder": str(folder),
                               "shipped_min_confidence_for_90": shipped_threshold}
    baseline: dict[str, Any] = {"scorer": "rules (shipped rules calibrator)"}
    dev_examples: list[Any] = []
    dev_f1s: list[float] = []
    for name, (root, names) in sets.items():
        dbs = read_corpus(root, only=names)
        missing = sorted(set(names) - {d.db_id for d in dbs})
        if missing:
            progress(f"warning: {name}: databases without questions or folder: {missing}")
        rules, learned, examples, f1s = measure_set(name, dbs, rules_scorer, learned_scorer, shipped_threshold)
        split_text = f"{SETS_HELP[name]}: {len(dbs)} databases, n = {learned['n']} questions"
        rules["split"] = learned["split"] = split_text
        figures[name], baseline[name] = learned, rules
        print_set(name, SETS_HELP[name], rules, learned)
        if name == "spider_dev":
            dev_examples, dev_f1s = examples, f1s
        if args.rdf:
            rdf_name = f"{name}_rdf"
            twins = rdf_twins(root, [d.db_id for d in dbs])
            rules, learned, _, _ = measure_set(rdf_name, twins, rules_scorer, learned_scorer, shipped_threshold)
            SETS_HELP[rdf_name] = f"{SETS_HELP[name]}, as RDF triple KGs"
            rules["split"] = learned["split"] = f"{SETS_HELP[rdf_name]}: {len(twins)} databases, n = {learned['n']}"
            figures[rdf_name], baseline[rdf_name] = learned, rules
            print_set(rdf_name, SETS_HELP[rdf_name], rules, learned)

    # reference only: the databases the learned scorer was trained on (F1 only)
    train_dbs = read_corpus(train_root, only=ids(split["train"]))
    t_rules, t_learned, _, _ = measure_set("train", train_dbs, rules_scorer, learned_scorer, None)
    train_split = f"{SETS_HELP['train']}: {len(train_dbs)} databases, n = {t_learned['n']} questions"
    figures["train_reference"] = {"n": t_learned["n"], "f1": t_learned["f1"], "split": train_split}
    baseline["train_reference"] = {"n": t_rules["n"], "f1": t_rules["f1"], "split": train_split}
    console.print(f"train (reference only, trained on): rules F1 {t_rules['f1']:.4f}, learned F1 "
                  f"{t_learned['f1']:.4f} — {train_split}", highlight=False)

    if args.agent > 0:
        figures["agent_path"] = agent_path(dev_root, dev_ids, args.agent, dev_examples, dev_f1s)

    def ratio_of(key: str) -> float | None:
        r = baseline[key]["f1"]
        return round(figures[key]["f1"] / r, 4) if r else None

    ratio: dict[str, Any] = {"f1_validation": ratio_of("validation"), "f1_spider_dev": ratio_of("spider_dev")}
    if "held_out" in figures:
        ratio["f1_held_out"] = ratio_of("held_out")
    ratio.update({f"f1_{name}": ratio_of(name) for name in figures if name.endswith("_rdf")})
    summary = Table(title="rules vs learned, same candidates, same run (F1; n = questions)", show_header=True,
                    header_style="bold")
    for col in ("set", "databases", "n", "rules F1", "learned F1", "learned / rules", "split"):
        summary.add_column(col, justify="left" if col in ("set", "split") else "right")
    for name in [n for s in sets for n in (s, f"{s}_rdf") if n in figures]:
        summary.add_row(name, str(figures[name]["n_databases"]), str(figures[name]["n"]),
                        _pct(baseline[name]["f1"]), _pct(figures[name]["f1"]), _pct(ratio_of(name)), SETS_HELP[name])
    summary.add_row("train (ref.)", str(len(train_dbs)), str(t_learned["n"]), _pct(t_rules["f1"]),
                    _pct(t_learned["f1"]), _pct(ratio_of("train_reference")), SETS_HELP["train"])
    if "agent_path" in figures:
        a = figures["agent_path"]["overall"]
        summary.add_row("agent path", str(a["databases_ok"]), str(a["n"]), "–", _pct(a["f1"]), "–",
                        figures["agent_path"]["split"] + f"; in-process learned F1 {_pct(a['in_process_f1'])}")
    console.print(summary)
    wall = round(time.perf_counter() - started, 1)
    figures["wall_s"] = wall
    progress(f"wall time {wall} s")
    n = figures["validation"]["n"] + figures["spider_dev"]["n"] + (figures["held_out"]["n"] if "held_out" in figures
                                                                    else 0)
    split_line = (f"spider_train validation databases ({figures['validation']['n_databases']}) + spider dev databases "
                  f"({figures['spider_dev']['n_databases']})"
                  + (f" + spider_train held-out databases ({figures['held_out']['n_databases']})"
                     if "held_out" in figures else "")
                  + f"; split from the shipped scorer's meta.json (seed {seed}), not recomputed")
    write_result(name="real_questions", figures=figures, baseline=baseline, ratio=ratio, split=split_line, n=n)


if __name__ == "__main__":
    main()

"""Questions beyond look-ups (issue 44 §5): the structured question sets through the LLM-free agent, today's planner
and the query-graph planner side by side in one run, per graph and per kind; and natural Freebase questions.

    python -m bench.query_graphs [--split dev|holdout|all] [--graphs scientists,courses] [--limit N] [--no-freebase]
    python -m bench.query_graphs --freebase-only      # only the natural WebQSP / CWQ measurement

Graphs are prepared as a new user would, into a temp work dir (``--work`` keeps one): the invented graphs of
:mod:`bench.user_graphs` with ``kgrag prepare --dataset NAME --triples FILE``, the demo KG with ``kgrag prepare
--dataset demo``, networks (the demo network, ``examples/library``, the invented courses network) with ``kgrag kn
load`` — each command in its own process, as typed. Questions: ``bench/questions/structured/<graph>_<split>.jsonl``
(:mod:`bench.questions.make_structured_questions`; gold computed from the data). Each question is asked in-process
through the agent graph (the code ``kgrag ask`` runs, no LLM) with ``AgentSettings(query_graphs=False)``
(today's planner: the **baseline**) and with ``query_graphs=True`` (the **figures**), interleaved question by
question in alternating order after one warm-up question each (neither runs alone on caches the other warmed). Per graph and kind: F1 / Hit / Hits@1 (:mod:`kgrag.agent.evaluation.evaluate`), n, p50 ms.
The demo KG's 18 questions and the three ``kgrag prepare --dataset demo`` suggests are scored as a set of their own.

Natural Freebase (``--freebase``, on by default): the Freebase-shaped fixture of :mod:`bench.freebase_fixture`
imported as an own graph with its 398 WebQSP / CWQ questions unsplit (the import splits them, seeded), asked
through the agent as typed — the topic linked from the text, not given — on the held-out validation split, per
dataset; the method of ``bench/own_kg.py --pair fixture``'s zero-shot figures, which the issue's "today" figures
(WebQSP Hit 0.59 / F1 0.50, CWQ 0.38 / 0.29) were measured with. All questions are reported too.

Targets (issue 44): F1 ≥ 0.90 on a readable held-out graph, ≥ 0.85 on its Wikidata-style twin, ≥ 0.90 on a
network's questions, every kind ≥ 0.75, the demo KG's 18 ≥ 0.90 with the 3 suggestions right, warm p50 ≤ 50 ms;
WebQSP Hit ≥ 0.80 / F1 ≥ 0.65, CWQ Hit ≥ 0.50 / F1 ≥ 0.40. Writes bench/results/query_graphs.json
(``query_graphs_dev.json`` / ``_all`` for the other splits; ``--dump``: every prediction as JSONL too).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bench.common import write_result

console = Console(width=150)
ROOT = Path(__file__).resolve().parents[1]
STRUCTURED = ROOT / "bench" / "questions" / "structured"
PLANNERS = {"today": False, "query_graphs": True}
#: graph -> how it is prepared and what the issue's targets call it
KG_GRAPHS = ("scientists", "scientists_wd", "bands", "bands_fb", "rivers", "rivers_wd", "demo_kg")
NETWORKS = ("courses", "library", "demo_net")
READABLE = ("scientists", "bands", "rivers")
WIKIDATA = ("scientists_wd", "rivers_wd")
F1_TARGETS = {"readable": 0.90, "wikidata": 0.85, "network": 0.90, "kind": 0.75, "demo18": 0.90}


def progress(message: str) -> None:
    console.print(f"[bench.query_graphs] {message}", highlight=False, markup=False)


def _cli(*args: str) -> tuple[bool, str, float]:
    """Run ``kgrag <args>`` in its own process: (ok, the last output line, seconds)."""
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "kgrag.cli", *args], capture_output=True, text=True, cwd=ROOT,
                          env=os.environ.copy(), check=False)
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    return done.returncode == 0, (lines[-1] if lines else ""), time.perf_counter() - t0


def prepare(graphs: list[str], files: Path) -> dict[str, dict]:
    """Prepare / load every graph; ``{graph: {"ok", "seconds", "how", "note"}}``."""
    from bench.user_graphs import write_graph

    out = {}
    for name in graphs:
        if name == "demo_kg":
            args: tuple[str, ...] = ("prepare", "--dataset", "demo")
        elif name == "demo_net":
            args = ("kn", "load", "demo", "--kn-id", "demo_net")
        elif name == "library":
            args = ("kn", "load", str(ROOT / "examples" / "library" / "library.yaml"))
        elif name == "courses":
            args = ("kn", "load", str(write_graph(name, files)))
        else:
            args = ("prepare", "--dataset", name, "--triples", str(write_graph(name, files)))
        ok, last, seconds = _cli(*args)
        out[name] = {"ok": ok, "seconds": round(seconds, 1), "how": "kgrag " + " ".join(args),
                     "note": "" if ok else last}
        progress(f"{name}: {'ready' if ok else 'FAILED'} in {seconds:.1f} s ({out[name]['how']}){'' if ok else ': ' + last}")
    return out


def answerer(name: str, query_graphs: bool):  # noqa: ANN201
    """``answer(question) -> final state`` on graph ``name`` through the agent graph, LLM-free."""
    from graphs.agent.context import AgentContext
    from graphs.agent.graph import graph
    from kgrag.agent.turn.messages import plain_state

    if name in NETWORKS:
        kn = "demo_net" if name == "demo_net" else name
        context, where = AgentContext(kn_id=kn, use_llm=False, query_graphs=query_graphs), {"kn_id": kn}
    else:
        kg = "demo" if name == "demo_kg" else name
        context, where = AgentContext(kg=kg, use_llm=False, query_graphs=query_graphs), {"kg": kg}

    def answer(question: str) -> dict:
        return plain_state(graph.invoke({"question": question, **where, "history": []}, context=context))

    return answer


def score(rows: list[dict], answers: dict[str, Any]) -> dict[str, list[dict]]:
    """Every row asked under each planner (``{planner: answer}``), interleaved question by question with the order
    alternating, after one warm-up question each, so that neither planner runs on the other's warmed caches alone;
    ``{planner: predictions}`` scored as :func:`kgrag.agent.evaluation.evaluate.evaluate` scores them."""
    from kgrag.agent.evaluation.evaluate import answer_source, set_scores, top_answer

    for answer in answers.values():
        answer(rows[0]["question"])
    out: dict[str, list[dict]] = {planner: [] for planner in answers}
    order = list(answers)
    for i, row in enumerate(rows):
        for planner in order if i % 2 == 0 else order[::-1]:
            started = time.perf_counter()
            state = answers[planner](row["question"])
            ms = (time.perf_counter() - started) * 1000
            values = [str(v) for v in state.get("answers") or []]
            hit, f1, exact = set_scores(values, row["answers"])
            top = top_answer(state)
            out[planner].append({
                "question": row["question"], "kind": row["kind"], "answers": values, "gold": row["answers"],
                "hits@1": float(top is not None and top.strip() in {a.strip() for a in row["answers"]}),
                "hit": hit, "f1": round(f1, 4), "exact": exact, "ms": round(ms, 2),
                "topic": (state.get("topic") or {}).get("name"), "gold_topic": row.get("topic"),
                "answer": state.get("answer", ""), "errors": state.get("errors", []),
                "confidence": float(state.get("confidence") or 0.0), "unused": len(state.get("unused") or []),
                "source": answer_source(state), "cross_check": state.get("cross_check"),
                # the answer given, or the best guess withheld below the threshold: what the confidence is about
                "guess_exact": set_scores([str(v) for v in (values or state.get("withheld") or [])],
                                          row["answers"])[2]})
    return out


def summary(predictions: list[dict]) -> dict[str, Any]:
    if not predictions:
        return {"n": 0}
    return {"n": len(predictions), "f1": round(statistics.fmean(p["f1"] for p in predictions), 4),
            "hit": round(statistics.fmean(p["hit"] for p in predictions), 4),
            "hits@1": round(statistics.fmean(p["hits@1"] for p in predictions), 4),
            "p50_ms": round(statistics.median(p["ms"] for p in predictions), 2)}


def by_kind(predictions: list[dict]) -> dict[str, dict]:
    groups: dict[str, list[dict]] = defaultdict(list)
    for p in predictions:
        groups[p["kind"]].append(p)
    return {kind: summary(groups[kind]) for kind in sorted(groups)}


def spread(rows: list[dict], limit: int) -> list[dict]:
    """At most ``limit`` rows taken round-robin over the kinds (so a short run still sees every kind)."""
    groups: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        groups[row["kind"]].append(row)
    picked: list[dict] = []
    for i in range(max(len(g) for g in groups.values())):
        picked += [g[i] for g in groups.values() if i < len(g)]
    keep = {id(r) for r in picked[:limit]}
    return [r for r in rows if id(r) in keep]


def structured(graphs: list[str], split: str, limit: int, dump: list[dict]) -> dict[str, Any]:
    """Every graph's question set under both planners: ``{planner: {graph: {"all", "kinds"}}, "excluded"}``."""
    from bench.questions.make_structured_questions import read_set

    result: dict[str, Any] = {planner: {} for planner in PLANNERS}
    pooled: dict[str, list[dict]] = {planner: [] for planner in PLANNERS}
    excluded: dict[str, str] = {}
    parts = ("dev", "holdout") if split == "all" else (split,)
    for name in graphs:
        rows = [r for part in parts if (STRUCTURED / f"{name}_{part}.jsonl").is_file() for r in read_set(
            f"{name}_{part}", STRUCTURED)]
        if not rows:
            excluded[name] = f"no {split} questions"
            continue
        rows = spread(rows, limit) if limit else rows
        scored = score(rows, {planner: answerer(name, flag) for planner, flag in PLANNERS.items()})
        for planner, preds in scored.items():
            pooled[planner] += preds
            dump += [{"graph": name, "planner": planner, **p} for p in preds]
            result[planner][name] = {"all": summary(preds), "kinds": by_kind(preds)}
            progress(f"{name} ({planner}): {result[planner][name]['all']}")
    for planner in PLANNERS:
        result[planner]["_all"] = {"all": summary(pooled[planner]), "kinds": by_kind(pooled[planner])}
    result["excluded"] = excluded
    return result


def demo_suggested(dump: list[dict]) -> dict[str, Any]:
    """The demo KG's 18 questions and the three ``kgrag prepare --dataset demo`` suggests, both planners."""
    from bench.questions.make_structured_questions import read_set
    from kgrag.config import get_settings
    from kgrag.prep.next_steps import sample_questions

    rows = read_set("demo_kg_suggested", STRUCTURED)
    quickstart = sample_questions(get_settings().dataset_dir("demo"))
    out: dict[str, Any] = {"quickstart": quickstart}
    scored = score(rows, {planner: answerer("demo_kg", flag) for planner, flag in PLANNERS.items()})
    for planner, preds in scored.items():
        dump += [{"graph": "demo_kg_suggested", "planner": planner, **p} for p in preds]
        right = {p["question"]: p["f1"] == 1.0 for p in preds}
        out[planner] = {**summary(preds), "right": sum(right.values()),
                        "quickstart_right": sum(right.get(q, False) for q in quickstart),
                        "wrong": [p["question"] for p in preds if p["f1"] < 1.0]}
        progress(f"demo KG 18 ({planner}): {out[planner]}")
    return out


def natural_freebase(dump: list[dict], limit: int) -> dict[str, Any]:
    """WebQSP / CWQ questions as typed on the Freebase-shaped fixture imported as an own graph (see the docstring)."""
    from bench.freebase_fixture import build_fixture
    from kgrag.config import get_settings
    from kgrag.graph.csr import CSRGraph
    from kgrag.prep.steps import read_prepared_questions

    settings = get_settings()
    if not (settings.data_dir / "freebase" / "webqsp_100.json").is_file():
        return {"excluded": f"no WebQSP / CWQ samples under {settings.data_dir / 'freebase'} (KGRAG_DATA_DIR)"}
    out_dir = settings.work_dir / "fixture-files"
    build_fixture(settings.data_dir / "freebase", out_dir)
    rows = [json.loads(line) for line in (out_dir / "questions.jsonl").open(encoding="utf-8")]
    unsplit = out_dir / "questions-unsplit.jsonl"
    unsplit.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "split"}) + "\n" for r in rows),
                       encoding="utf-8")
    ok, last, seconds = _cli("prepare", "--dataset", "fbfix", "--triples", str(out_dir / "graph.nt.gz"),
                             "--questions", str(unsplit))
    progress(f"fbfix: {'ready' if ok else 'FAILED: ' + last} in {seconds:.1f} s")
    if not ok:
        return {"excluded": last}
    dataset_of = {r["question"]: r["dataset"] for r in rows}
    graph = CSRGraph.load(settings.dataset_dir("fbfix") / "graph.npz")
    asked: list[dict] = []
    for q in read_prepared_questions(settings.dataset_dir("fbfix")):
        if q["answer_index"]:  # gold as the graph's names, as bench/own_kg.py's zero-shot figures read it
            asked.append({"question": q["text"], "answers": [graph.entity_names[i] or graph.entity_ids[i]
                                                             for i in q["answer_index"]],
                          "kind": f"{dataset_of.get(q['text'], 'unknown')}:{q['split']}"})
    asked = spread(asked, limit) if limit else asked
    answers = {planner: answerer("fbfix", flag) for planner, flag in PLANNERS.items()}
    scored = score(asked, answers)
    result: dict[str, Any] = {"prepare_s": round(seconds, 1)}
    for planner, preds in scored.items():
        result[planner] = by_kind(preds)
        for source in sorted({p["kind"].split(":")[0] for p in preds}):
            result[planner][f"{source}:all"] = summary([p for p in preds if p["kind"].startswith(source + ":")])
        dump += [{"graph": "fbfix", "planner": planner, **p} for p in preds]
        progress(f"fbfix ({planner}): {result[planner]}")
    return result


def targets(res: dict[str, Any], demo: dict[str, Any] | None, fb: dict[str, Any] | None, planner: str
            ) -> dict[str, Any]:
    """The issue's targets for one planner: ``{target: {"value", "pass"}}`` (a graph not run: absent)."""
    runs = res.get(planner, {})
    out: dict[str, Any] = {}

    def check(name: str, value: float | None, bar: float) -> None:
        if value is not None:
            out[name] = {"value": value, "bar": bar, "pass": value >= bar}

    for g in READABLE:
        check(f"f1_{g}_ge_0.90", runs.get(g, {}).get("all", {}).get("f1"), F1_TARGETS["readable"])
    for g in WIKIDATA:
        check(f"f1_{g}_ge_0.85", runs.get(g, {}).get("all", {}).get("f1"), F1_TARGETS["wikidata"])
    for g in NETWORKS:
        check(f"f1_{g}_ge_0.90", runs.get(g, {}).get("all", {}).get("f1"), F1_TARGETS["network"])
    for kind, fig in runs.get("_all", {}).get("kinds", {}).items():
        check(f"f1_kind_{kind}_ge_0.75", fig.get("f1"), F1_TARGETS["kind"])
    if demo:
        check("demo18_f1_ge_0.90", demo[planner]["f1"], F1_TARGETS["demo18"])
        out["quickstart_3_right"] = {"value": demo[planner]["quickstart_right"], "bar": 3,
                                     "pass": demo[planner]["quickstart_right"] == 3}
    p50 = runs.get("_all", {}).get("all", {}).get("p50_ms")
    if p50 is not None:
        out["warm_p50_le_50ms"] = {"value": p50, "bar": 50, "pass": p50 <= 50}
    if fb and planner in fb:
        for ds, hit_bar, f1_bar in (("webqsp", 0.80, 0.65), ("cwq", 0.50, 0.40)):
            fig = fb[planner].get(f"{ds}:validation")
            if fig:
                check(f"{ds}_hit_ge_{hit_bar}", fig["hit"], hit_bar)
                check(f"{ds}_f1_ge_{f1_bar}", fig["f1"], f1_bar)
    return out


def tables(res: dict[str, Any], demo: dict[str, Any] | None, fb: dict[str, Any] | None) -> None:
    graphs = [g for g in res.get("today", {}) if g != "_all"] + ["_all"]
    for g in graphs:
        if g not in res["today"] or "f1" not in res["today"][g].get("all", {}):
            continue  # no structured question was asked (--freebase-only)
        table = Table(title=f"{g if g != '_all' else 'all graphs'}: today's planner vs query graphs")
        for col in ("kind", "n", "F1 today", "F1 qg", "Hit today", "Hit qg", "Hits@1 today", "Hits@1 qg",
                    "p50 ms today", "p50 ms qg"):
            table.add_column(col, justify="right")
        rows = {**res["today"][g]["kinds"], "ALL": res["today"][g]["all"]}
        for kind, today in rows.items():
            new = res["query_graphs"][g]["all"] if kind == "ALL" else res["query_graphs"][g]["kinds"][kind]
            table.add_row(kind, str(today["n"]), *(f"{fig[k]:.3f}" for k in ("f1", "hit", "hits@1")
                                                   for fig in (today, new)),
                          f"{today['p50_ms']:.1f}", f"{new['p50_ms']:.1f}")
        console.print(table)
    if demo:
        console.print(f"demo KG 18 questions: today {demo['today']['right']}/18 right (F1 {demo['today']['f1']}), "
                      f"quickstart {demo['today']['quickstart_right']}/3; query graphs {demo['query_graphs']['right']}"
                      f"/18 (F1 {demo['query_graphs']['f1']}), quickstart {demo['query_graphs']['quickstart_right']}/3",
                      highlight=False)
    if fb and "today" in fb:
        table = Table(title="natural Freebase (fixture, topic linked from the text)")
        for col in ("set", "n", "Hit today", "F1 today", "Hit qg", "F1 qg"):
            table.add_column(col, justify="right")
        for name, fig in fb["today"].items():
            new = fb["query_graphs"][name]
            table.add_row(name, str(fig["n"]), f"{fig['hit']:.3f}", f"{fig['f1']:.3f}", f"{new['hit']:.3f}",
                          f"{new['f1']:.3f}")
        console.print(table)


def main() -> None:
    from bench.questions.make_structured_questions import MIXED
    from bench.user_graphs import GRAPHS

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", choices=("dev", "holdout", "all"), default="holdout")
    parser.add_argument("--graphs", help="comma-separated graphs (default: all that have questions of the split)")
    parser.add_argument("--limit", type=int, default=0, help="questions per graph (0: all)")
    parser.add_argument("--work", type=Path, help="work dir to prepare into and keep (default: a temp dir)")
    parser.add_argument("--no-freebase", action="store_true", help="skip the natural Freebase measurement")
    parser.add_argument("--freebase-only", action="store_true", help="only the natural Freebase measurement")
    parser.add_argument("--dump", type=Path, help="write every prediction here (JSONL)")
    args = parser.parse_args()

    known = [*GRAPHS, *MIXED]
    graphs = args.graphs.split(",") if args.graphs else [
        g for g in known if any((STRUCTURED / f"{g}_{p}.jsonl").is_file()
                                for p in (("dev", "holdout") if args.split == "all" else (args.split,)))]
    unknown = sorted(set(graphs) - set(known))
    if unknown:
        raise SystemExit(f"unknown graphs {unknown}; known: {', '.join(known)}")
    graphs = [] if args.freebase_only else graphs
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-query-graphs-"))
    work.mkdir(parents=True, exist_ok=True)
    os.environ.update(KGRAG_WORK_DIR=str(work), KGRAG_LLM_BASE_URL="", HF_HUB_OFFLINE="1",
                      PREFECT_HOME=os.environ.get("PREFECT_HOME", str(work / ".prefect")))
    os.environ.pop("KGRAG_DATABASE_URL", None)
    from kgrag.config import get_settings

    get_settings.cache_clear()
    dump: list[dict] = []
    try:
        prepared = prepare(graphs, work / "files")
        ready = [g for g in graphs if prepared[g]["ok"]]
        res = structured(ready, args.split, args.limit, dump)
        res["excluded"].update({g: f"not prepared: {prepared[g]['note']}" for g in graphs if not prepared[g]["ok"]})
        demo = demo_suggested(dump) if "demo_kg" in ready else None
        fb = None if args.no_freebase else natural_freebase(dump, args.limit)
        tables(res, demo, fb)
        goals = {planner: targets(res, demo, fb, planner) for planner in PLANNERS}
        for planner, goal in goals.items():
            passed = sum(g["pass"] for g in goal.values())
            progress(f"targets ({planner}): {passed}/{len(goal)} pass; failing: "
                     f"{', '.join(k for k, g in goal.items() if not g['pass']) or 'none'}")
        if args.dump:
            args.dump.write_text("".join(json.dumps(p, ensure_ascii=False) + "\n" for p in dump), encoding="utf-8")
        figures = {"structured": res["query_graphs"], "demo_kg_18": demo["query_graphs"] if demo else None,
                   "natural_freebase": fb.get("query_graphs") if fb else None, "targets": goals["query_graphs"],
                   "prepare": prepared, "excluded": res["excluded"]}
        baseline = {"structured": res["today"], "demo_kg_18": demo["today"] if demo else None,
                    "natural_freebase": fb.get("today") if fb else None, "targets": goals["today"]}
        ratio = {g: round(res["query_graphs"][g]["all"]["f1"] / res["today"][g]["all"]["f1"], 3)
                 if res["today"][g]["all"].get("f1") else None for g in res["today"]}
        n = res["today"].get("_all", {}).get("all", {}).get("n", 0)
        write_result("query_graphs" + ("" if args.split == "holdout" else f"_{args.split}"), figures, baseline, ratio,
                     f"{args.split} (structured sets, bench/questions/structured; natural Freebase: the fixture's "
                     f"seeded validation split)" + (f", {args.limit} per graph across kinds" if args.limit else ""), n,
                     module="query_graphs")
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

"""Training H-RAG on a user's own graph, imported through the generic path, at ``make run``'s budget.

``--pair metaqa`` (default): MetaQA imported as an own graph (``kgrag prepare --dataset metaqa-tsv --triples kb.txt
--questions {1,2,3}-hop/dev.txt``) against the built-in reader, both trained and answered in one run with the same
budget (retriever: RUN_RETRIEVER_CONFIG, reasoner: RUN_GFLOWNET_CONFIG). Baseline = the built-in reader; ratio =
generic − built-in Hits@1 per hop in points (the bar: within 0.1). Both use the seeded train/validation split of the
dev questions (the same questions land in the same split: tests/test_own_kg.py checks it).

``--pair fixture``: the Freebase-shaped fixture (:mod:`bench.freebase_fixture`: N-Triples from the WebQSP / CWQ
samples, 398 questions with no split given → the import's seeded train/validation split) and the demo KG exported
as N-Triples with its 18 questions as canonical JSONL: each imported, trained (demo budget for the demo, the make
run budget for the fixture) and answered on its validation split; the baseline there is the zero-shot agent
(``kgrag agent-eval``'s path, untrained) on the same validation questions.

Figures per dataset: import seconds, graph counts, training seconds, validation Hits@1 / Hit / F1 per hop of the
LLM-free reasoner (the planner's chain search on g_agent, the F1 threshold chosen on validation as ``make run``
does). Work dir: ``<KGRAG_WORK_DIR>/bench-own-kg``.

``--pair import``: the streaming import's speed (read + CSR) on MetaQA's ``kb.txt`` and on its N-Triples export
(plain and gzipped) against the built-in reader, best of 3.

Run: ``python -m bench.own_kg [--pair metaqa|fixture|import]``; writes bench/results/own_kg_<pair>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from bench.common import write_result
from kgrag.config import get_settings

console = Console()


def _figures(report: dict) -> dict:
    """Per hop row: n and Hits@1 / Hit / F1 in percent."""
    return {hop: {"n": int(row["n"]), **{k: round(100 * float(row[k]), 2) for k in ("hits@1", "hit", "f1")}}
            for hop, row in report.items()}


def train_and_answer(name: str, spec: dict | None, retriever: dict, gflownet: dict) -> dict:
    """Prepare (import) ``name``, train the retriever and the reasoner, answer its validation split."""
    from flows.prepare_data import prepare_data
    from flows.retriever_eval import retriever_eval
    from flows.train_gflownet import train_gflownet
    from flows.train_retriever import train_retriever

    t0 = time.perf_counter()
    prepared = prepare_data(dataset=name, spec=spec)
    prep_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    train_retriever(dataset=name, config=retriever)
    retriever_eval(dataset=name, run_all_splits=True, split="validation")
    trained = train_gflownet(dataset=name, config=gflownet)
    graph = prepared["graph"]
    return {"prepare_s": round(prep_s, 1), "train_s": round(time.perf_counter() - t0, 1),
            "triples": graph["triples"], "entities": graph["entities"], "relations": graph["relations"],
            "questions": prepared["questions"]["questions"], "validation": _figures(trained["validation"]["report"])}


def _table(title: str, results: dict[str, dict]) -> None:
    table = Table(title=title)
    for col in ("dataset", "rows", "n", "hits@1", "hit", "f1"):
        table.add_column(col, justify="right")
    for name, row in results.items():
        for hop, fig in row["validation"].items():
            table.add_row(name, str(hop), str(fig["n"]), *(f"{fig[k]:.2f}" for k in ("hits@1", "hit", "f1")))
    console.print(table)


def metaqa_pair(settings) -> None:
    from kgrag.data.spec import DatasetSpec
    from kgrag.run_parts import RUN_GFLOWNET_CONFIG, RUN_RETRIEVER_CONFIG

    metaqa = settings.data_dir / "metaqa"
    generic = DatasetSpec(name="metaqa-tsv", reader="triples", triples=(str(metaqa / "kb.txt"),),
                          questions=tuple(str(metaqa / f"{k}-hop" / "dev.txt") for k in (1, 2, 3)))
    results = {"metaqa": train_and_answer("metaqa", None, RUN_RETRIEVER_CONFIG, RUN_GFLOWNET_CONFIG),
               "metaqa-tsv": train_and_answer("metaqa-tsv", generic.model_dump(mode="json"), RUN_RETRIEVER_CONFIG,
                                              RUN_GFLOWNET_CONFIG)}
    _table("MetaQA validation, make run's budget: built-in reader vs the generic TSV import", results)
    builtin, ours = results["metaqa"]["validation"], results["metaqa-tsv"]["validation"]
    delta = {hop: round(ours[hop]["hits@1"] - builtin[hop]["hits@1"], 2) for hop in builtin if hop in ours}
    write_result("own_kg_metaqa", results["metaqa-tsv"], results["metaqa"], delta,
                 "validation (seeded 10% of MetaQA dev)", int(builtin["all"]["n"]), module="own_kg")


def _zero_shot_validation(settings, name: str) -> dict:
    """The untrained agent path (zero-shot chains, topics linked from the text) on the validation questions."""
    from graphs.agent.run import agent_answerer
    from kgrag.agent.evaluation.evaluate import EvalItem, evaluate
    from kgrag.graph.csr import CSRGraph
    from kgrag.prep.steps import read_prepared_questions

    graph = CSRGraph.load(settings.dataset_dir(name) / "graph.npz")
    items = []
    for q in read_prepared_questions(settings.dataset_dir(name)):
        if q["split"] == "validation" and q["answer_index"]:
            answers = tuple(graph.entity_names[i] or graph.entity_ids[i] for i in q["answer_index"])
            items.append(EvalItem(q["text"], answers, None))
    answer = agent_answerer(settings.agent_kn_id, False, name)
    figures = evaluate(items, lambda text: answer(text))["figures"]
    return {k: figures[k] for k in ("n", "hits@1", "hit", "f1", "p50_ms")}


def fixture_pair(settings) -> None:
    from bench.freebase_fixture import build_fixture
    from kgrag.data.spec import DatasetSpec
    from kgrag.run_parts import DEMO_GFLOWNET_CONFIG, RUN_GFLOWNET_CONFIG, RUN_RETRIEVER_CONFIG

    out = settings.work_dir / "fixture-files"
    build_fixture(settings.data_dir / "freebase", out)
    rows = [json.loads(line) for line in (out / "questions.jsonl").open(encoding="utf-8")]
    unsplit = out / "questions-unsplit.jsonl"  # no split given: the import splits them (seeded, by hop)
    unsplit.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "split"}) + "\n" for r in rows),
                       encoding="utf-8")
    # the demo KG, exported by its own prep (N-Triples) with its questions as canonical JSONL
    from flows.prepare_data import prepare_data
    from kgrag.data import load_questions
    from kgrag.data.spec import BUILTIN_SPECS

    demo_dir = Path(prepare_data(dataset="demo")["out_dir"])
    demo_q = out / "demo-questions.jsonl"
    demo_q.write_text("".join(json.dumps({"question": q.text, "topic_entities": q.topic_ids,
                                          "answers": q.answer_names}) + "\n"
                              for q in load_questions(BUILTIN_SPECS["demo"]).records), encoding="utf-8")
    specs = {"fbfix": DatasetSpec(name="fbfix", reader="triples", triples=(str(out / "graph.nt.gz"),),
                                  questions=(str(unsplit),)),
             "demo-nt": DatasetSpec(name="demo-nt", reader="triples", triples=(str(demo_dir / "triples.nt"),),
                                    questions=(str(demo_q),), validation_fraction=0.2)}
    budgets = {"fbfix": RUN_GFLOWNET_CONFIG, "demo-nt": {**DEMO_GFLOWNET_CONFIG, "batch_questions": 14}}
    results, zero_shot = {}, {}
    for name, spec in specs.items():
        results[name] = train_and_answer(name, spec.model_dump(mode="json"), RUN_RETRIEVER_CONFIG, budgets[name])
        zero_shot[name] = _zero_shot_validation(get_settings(), name)
    _table("Own graphs imported through the generic path: trained H-RAG on their validation split", results)
    console.print(f"zero-shot agent on the same validation questions: {json.dumps(zero_shot)}")
    write_result("own_kg_fixture", results, zero_shot, {n: results[n]["validation"]["all"]["hits@1"]
                                                        - 100 * zero_shot[n]["hits@1"] for n in results},
                 "validation (seeded split of each import)", sum(int(r["validation"]["all"]["n"])
                                                                 for r in results.values()), module="own_kg")


def import_speed(settings) -> None:
    """The streaming import (read + CSR) of MetaQA as ``kb.txt`` lines, as N-Triples and as gzipped N-Triples (its
    own export), against the built-in reader (``load_kg`` + ``CSRGraph.from_dataset``) in the same run; best of 3."""
    import gzip
    import resource

    from kgrag.data import load_kg
    from kgrag.data.spec import BUILTIN_SPECS
    from kgrag.data.triples import read_triple_files
    from kgrag.graph.csr import CSRGraph
    from kgrag.graph.imported import imported_csr
    from kgrag.graph.rdf import write_ntriples

    kg = load_kg(BUILTIN_SPECS["metaqa"], settings.data_dir)
    built = CSRGraph.from_dataset(kg)
    files = settings.work_dir / "import-files"
    files.mkdir(parents=True, exist_ok=True)
    lines = write_ntriples(built, kg, files / "metaqa.nt")
    (files / "metaqa.nt.gz").write_bytes(gzip.compress((files / "metaqa.nt").read_bytes(), 6))

    def best(fn) -> float:
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return min(times)

    baseline_s = best(lambda: CSRGraph.from_dataset(load_kg(BUILTIN_SPECS["metaqa"], settings.data_dir)))
    figures = {}
    for label, path, n in (("kb.txt", settings.data_dir / "metaqa" / "kb.txt", built.num_triples),
                           ("metaqa.nt", files / "metaqa.nt", lines), ("metaqa.nt.gz", files / "metaqa.nt.gz", lines)):
        graph = imported_csr(read_triple_files([path]), "x", "http://x/", "en")
        seconds = best(lambda p=path: imported_csr(read_triple_files([p]), "x", "http://x/", "en"))
        figures[label] = {"lines": n, "seconds": round(seconds, 3), "lines_per_s": round(n / seconds),
                          "edges": graph.num_triples, "nodes": graph.num_entities}
    figures["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    table = Table(title="Import (read + CSR), best of 3; baseline: the built-in MetaQA reader")
    for col in ("file", "lines", "seconds", "lines/s", "edges", "nodes"):
        table.add_column(col, justify="right")
    for label, row in figures.items():
        if isinstance(row, dict):
            table.add_row(label, f"{row['lines']:,}", f"{row['seconds']:.2f}", f"{row['lines_per_s']:,}",
                          f"{row['edges']:,}", f"{row['nodes']:,}")
    table.add_row("built-in reader", f"{built.num_triples:,}", f"{baseline_s:.2f}",
                  f"{round(built.num_triples / baseline_s):,}", f"{built.num_triples:,}", f"{built.num_entities:,}")
    console.print(table)
    write_result("own_kg_import", figures, {"builtin_reader_s": round(baseline_s, 3)},
                 round(figures["kb.txt"]["seconds"] / baseline_s, 2), "MetaQA kb.txt and its N-Triples export",
                 built.num_triples, module="own_kg")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--pair", choices=("metaqa", "fixture", "import"), default="metaqa")
    args = parser.parse_args()
    os.environ["KGRAG_WORK_DIR"] = str(get_settings().work_dir / "bench-own-kg")
    get_settings.cache_clear()
    {"metaqa": metaqa_pair, "fixture": fixture_pair, "import": import_speed}[args.pair](get_settings())


if __name__ == "__main__":
    main()

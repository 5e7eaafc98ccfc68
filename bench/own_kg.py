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

Run: ``python -m bench.own_kg [--pair metaqa|fixture]``; writes bench/results/own_kg_<pair>.json.
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
    from kgrag.agent.training.evaluate import EvalItem, evaluate
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

    demo_dir = Path(prepare_data(dataset="demo")["out_dir"])
    demo_q = out / "demo-questions.jsonl"
    demo_q.write_text("".join(json.dumps({"question": q.text, "topic_entities": q.topic_ids,
                                          "answers": q.answer_names}) + "\n"
                              for q in load_questions("demo").records), encoding="utf-8")
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--pair", choices=("metaqa", "fixture"), default="metaqa")
    args = parser.parse_args()
    os.environ["KGRAG_WORK_DIR"] = str(get_settings().work_dir / "bench-own-kg")
    get_settings.cache_clear()
    (metaqa_pair if args.pair == "metaqa" else fixture_pair)(get_settings())


if __name__ == "__main__":
    main()

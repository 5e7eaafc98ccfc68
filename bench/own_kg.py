"""MetaQA imported as a user's own graph (the generic TSV path: ``kgrag prepare --dataset metaqa-tsv --triples
kb.txt --questions {1,2,3}-hop/dev.txt``) against the built-in MetaQA reader, trained and answered in one run at
``make run``'s budget (retriever: RUN_RETRIEVER_CONFIG, reasoner: RUN_GFLOWNET_CONFIG).

Figures per dataset: import seconds, graph counts, validation Hits@1 / Hit / F1 per hop of the LLM-free reasoner
(the planner's chain search on g_agent, the F1 threshold chosen on validation as ``make run`` does). The baseline
is the built-in reader; the ratio is generic − built-in Hits@1 per hop (in points; the issue's bar: within 0.1).
Both use the seeded train/validation split of the dev questions (the same questions land in the same split:
tests/test_own_kg.py checks it). Work dir: ``<KGRAG_WORK_DIR>/bench-own-kg`` (kept between runs: a re-run reuses
the prepared data and retrains).

Run: ``python -m bench.own_kg``; writes bench/results/own_kg.json.
"""

from __future__ import annotations

import os
import time

from rich.console import Console
from rich.table import Table

from bench.common import write_result
from kgrag.config import get_settings

console = Console()
DATASETS = ("metaqa", "metaqa-tsv")


def _figures(report: dict) -> dict:
    """Per hop row: n and Hits@1 / Hit / F1 in percent."""
    return {hop: {"n": int(row["n"]), **{k: round(100 * float(row[k]), 2) for k in ("hits@1", "hit", "f1")}}
            for hop, row in report.items()}


def main() -> None:
    base = get_settings()
    os.environ["KGRAG_WORK_DIR"] = str(base.work_dir / "bench-own-kg")
    get_settings.cache_clear()
    settings = get_settings()
    from flows.prepare_data import prepare_data
    from flows.retriever_eval import retriever_eval
    from flows.train_gflownet import train_gflownet
    from flows.train_retriever import train_retriever
    from kgrag.data.spec import DatasetSpec
    from kgrag.run_parts import RUN_GFLOWNET_CONFIG, RUN_RETRIEVER_CONFIG

    metaqa = settings.data_dir / "metaqa"
    generic = DatasetSpec(name="metaqa-tsv", reader="triples", triples=(str(metaqa / "kb.txt"),),
                          questions=tuple(str(metaqa / f"{k}-hop" / "dev.txt") for k in (1, 2, 3)))
    results: dict[str, dict] = {}
    for name in DATASETS:
        t0 = time.perf_counter()
        prepared = prepare_data(dataset=name, spec=generic.model_dump(mode="json") if name == "metaqa-tsv" else None)
        prep_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        train_retriever(dataset=name, config=RUN_RETRIEVER_CONFIG)
        retriever_eval(dataset=name, run_all_splits=True, split="validation")
        trained = train_gflownet(dataset=name, config=RUN_GFLOWNET_CONFIG)
        train_s = time.perf_counter() - t0
        graph = prepared["graph"]
        results[name] = {"prepare_s": round(prep_s, 1), "train_s": round(train_s, 1),
                         "triples": graph["triples"], "entities": graph["entities"], "relations": graph["relations"],
                         "questions": prepared["questions"]["questions"],
                         "validation": _figures(trained["validation"]["report"])}
    table = Table(title="MetaQA validation, make run's budget: built-in reader vs the generic TSV import")
    for col in ("dataset", "hop", "n", "hits@1", "hit", "f1"):
        table.add_column(col, justify="right")
    for name, row in results.items():
        for hop, fig in row["validation"].items():
            table.add_row(name, str(hop), str(fig.get("n", "")), *(f"{fig.get(k, float('nan')):.2f}"
                                                                  for k in ("hits@1", "hit", "f1")))
    console.print(table)
    builtin, ours = results["metaqa"]["validation"], results["metaqa-tsv"]["validation"]
    delta = {hop: round(ours[hop]["hits@1"] - builtin[hop]["hits@1"], 2) for hop in builtin if hop in ours}
    n = int(sum(f.get("n", 0) for hop, f in builtin.items() if hop != "all"))
    write_result("own_kg", results["metaqa-tsv"], results["metaqa"], delta, "validation (seeded 10% of MetaQA dev)", n)


if __name__ == "__main__":
    main()

"""No-regression check of the network query graphs on the medical agent: the same seeded sample of the held-out
CE-Prompt validation questions answered LLM-free with ``query_graphs=False`` (the one-relation planners) and
``query_graphs=True``, in one run, under the intent ranker ``KGRAG_AGENT_INTENT`` picks (labelled / self / none).

    KGRAG_AGENT_INTENT=labelled python -m bench.agent_query_graphs --sample 400 --seed 44

Needs the medical network in the store (``KGRAG_DATABASE_URL``) and a trained labelled ranker (its validation
split is the question set; ``kgrag train-intent --source labelled``). Prints per setting: Hit, F1, exact,
topic_acc, both_right, p50 / p95 ms and how many questions a query graph answered; then the questions whose F1
changed between the two settings (the regressions first). Writes ``bench/results/agent_query_graphs_<mode>.json``.
"""

from __future__ import annotations

import argparse
import os
import random
from typing import Any

from bench.common import write_result


def _row(figures: dict[str, Any], predictions: list[dict[str, Any]]) -> dict[str, Any]:
    keys = ("n", "hit", "f1", "exact", "topic_acc", "both_right", "p50_ms", "p95_ms", "intent_planner")
    return {**{k: figures[k] for k in keys},
            "query_graph_answered": sum(p.get("query_graph") is not None for p in predictions)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sample", type=int, default=400, help="validation questions drawn (0: all)")
    parser.add_argument("--seed", type=int, default=44, help="the sample's seed")
    parser.add_argument("--show", type=int, default=15, help="changed questions printed")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    from graphs.agent.context import AgentContext
    from graphs.agent.graph import graph
    from kgrag.agent.evaluation.evaluate import EvalItem, evaluate
    from kgrag.agent.training.train_intent import split_questions
    from kgrag.config import get_settings

    settings = get_settings()
    records = split_questions(settings, "validation")
    if args.sample and args.sample < len(records):
        records = random.Random(args.seed).sample(records, args.sample)
    items = [EvalItem(r["question"], tuple(r["answers"]), r["topic"], r["label"]) for r in records]

    runs: dict[str, dict[str, Any]] = {}
    for query_graphs in (False, True):
        context = AgentContext(kn_id="medical", use_llm=False, query_graphs=query_graphs)

        def answer(question: str, context: AgentContext = context) -> dict[str, Any]:
            return graph.invoke({"question": question, "kn_id": "medical"}, context=context)

        answer(items[0].question)  # warm: store, lexicon, ranker
        runs[f"query_graphs={query_graphs}"] = evaluate(items, answer)

    before, after = runs["query_graphs=False"], runs["query_graphs=True"]
    table = {name: _row(r["figures"], r["predictions"]) for name, r in runs.items()}
    for name, row in table.items():
        print(f"{name}: {row}")
    changed = [(a["f1"] - b["f1"], b, a) for b, a in zip(before["predictions"], after["predictions"], strict=True)
               if a["f1"] != b["f1"]]
    changed.sort(key=lambda c: c[0])
    print(f"{len(changed)} questions changed F1 ({sum(d < 0 for d, _, _ in changed)} worse)")
    for delta, b, a in changed[: args.show]:
        print(f"  {delta:+.2f} {a['question']} | gold {a['gold'][:3]} | before {b['answers'][:3]} "
              f"| after {a['answers'][:3]} | plan {(a['query_graph'] or {}).get('aggregation')}")
    mode = settings.agent_intent
    ratio = {"f1_after_over_before": round(table["query_graphs=True"]["f1"] / max(table["query_graphs=False"]["f1"],
                                                                                  1e-9), 4)}
    write_result(f"agent_query_graphs_{mode}", {"after": table["query_graphs=True"],
                                                "changed": [{"delta": round(d, 4), "question": a["question"],
                                                             "before": b["answers"][:5], "after": a["answers"][:5]}
                                                            for d, b, a in changed]},
                 baseline=table["query_graphs=False"], ratio=ratio,
                 split=f"medical CE-Prompt validation split of train-intent, seeded sample (seed {args.seed}); "
                       f"intent ranker {mode}", n=len(items), module="agent_query_graphs")


if __name__ == "__main__":
    main()

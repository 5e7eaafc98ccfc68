"""The zero-shot (LLM-free, untrained) chain ranker over a Freebase-shaped graph, against a 30-line MiniLM
baseline measured in the same run.

    python -m bench.zero_shot_kg [--limit N]      # writes bench/results/zero_shot_kg.json

Graph and questions: :mod:`bench.freebase_fixture` (built from the shared WebQSP / CWQ samples; see its
docstring), loaded into an embedded Oxigraph store. Topic entities are given to both methods (the official
setting). Per question set (WebQSP, CWQ, and CWQ per compositionality type): **Hit** (any predicted answer is
gold), set **F1**, **Hits@1** (the first predicted answer is gold) — the definitions of
:mod:`kgrag.agent.evaluation.evaluate` (``set_scores``), compared on entity ids (literal values for value
answers) — and p50 latency per question (the model warm, the embedding cache cold at start).

Baseline: the topics' one-hop and CVT two-hop chains (the same enumeration), MiniLM cosine between the question
and the chain's relation words, answer = the best chain's named ends.
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import write_result
from bench.freebase_fixture import build_fixture


def baseline(ranker: Any, question: str, topics: list[str]) -> list[str]:
    """The 30-line baseline: one-hop + CVT two-hop chains, MiniLM cosine to the relation words, best chain's ends."""
    chains = [c for t in topics for c in ranker.enumerate(t) if c.named]
    if not chains:
        return []
    sims = ranker.embedder.similarity(question, [c.words for c in chains])
    best = max(range(len(chains)), key=lambda i: (sims[i], -i))
    ends = ranker.fetch([chains[best]])[0].ends
    return sorted((k for k, e in ends.items() if not e.is_literal and k not in topics),
                  key=lambda k: (ends[k].label, k))


def _scores(predicted: list[str], gold: list[str]) -> tuple[float, float, float]:
    from kgrag.agent.evaluation.evaluate import set_scores

    hit, f1, _ = set_scores(predicted, gold)
    return hit, f1, float(bool(predicted) and predicted[0] in set(gold))


def _table(rows: dict[str, dict[str, Any]]) -> str:
    head = f"{'set':<22}{'n':>5}  {'method':<10}{'Hit':>7}{'F1':>7}{'Hits@1':>8}{'p50 ms':>9}"
    lines = [head, "-" * len(head)]
    for name, row in rows.items():
        for method in ("zero_shot", "baseline"):
            m = row[method]
            lines.append(f"{name:<22}{row['n']:>5}  {method:<10}{m['hit']:>7.3f}{m['f1']:>7.3f}{m['hits@1']:>8.3f}"
                         f"{m['p50_ms']:>9.1f}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--limit", type=int, default=0, help="questions per set (0 = all)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    from kgrag.agent.kg.zero_shot import ZeroShotChainRanker
    from kgrag.config import get_settings
    from kgrag.graph.oxigraph_store import OxigraphStore, build_store
    from kgrag.rank.sentence_embedder import Embedder
    from kgrag.tools.client import KGClient
    from kgrag.tools.relations import RelationFilters

    settings = get_settings()
    folder = Path(tempfile.mkdtemp(prefix="zero-shot-kg-"))
    try:
        report = build_fixture(settings.data_dir / "freebase", folder / "fixture", seed=args.seed)
        plain = folder / "graph.nt"
        with gzip.open(folder / "fixture" / "graph.nt.gz", "rb") as src, plain.open("wb") as dst:
            shutil.copyfileobj(src, dst)
        build_store(plain, folder / "store")
        store = OxigraphStore(folder / "store")
        filters = RelationFilters.from_data_dir(settings.data_dir)
        ranker = ZeroShotChainRanker(KGClient(store), Embedder(cache_dir=None), skip=filters.is_meaningless)
        questions = [json.loads(line) for line in (folder / "fixture" / "questions.jsonl").open(encoding="utf-8")]
        ranker.embedder.encode_query("warm up")
        per: dict[str, list[dict[str, Any]]] = {}
        for q in questions:
            sets = [q["dataset"]] + ([f"cwq:{q['kind']}"] if q["dataset"] == "cwq" else [])
            if args.limit and len(per.get(q["dataset"], [])) >= args.limit:
                continue
            started = time.perf_counter()
            zs = ranker.answer(q["question"], q["topic_entities"])
            zs_ms = (time.perf_counter() - started) * 1000
            started = time.perf_counter()
            base = baseline(ranker, q["question"], q["topic_entities"])
            base_ms = (time.perf_counter() - started) * 1000
            record = {"id": q["id"], "zero_shot": (*_scores([a.id for a in zs.answers], q["answers"]), zs_ms),
                      "baseline": (*_scores(base, q["answers"]), base_ms), "chain": zs.chain,
                      "needs_filter": q["needs_filter"]}
            for name in sets:
                per.setdefault(name, []).append(record)
        rows: dict[str, dict[str, Any]] = {}
        for name in sorted(per, key=lambda n: (n.count(":"), n != "webqsp", n)):
            records = per[name]
            rows[name] = {"n": len(records), "needs_filter": sum(r["needs_filter"] for r in records)}
            for method in ("zero_shot", "baseline"):
                cols = list(zip(*(r[method] for r in records), strict=True))
                rows[name][method] = {"hit": round(statistics.fmean(cols[0]), 4),
                                      "f1": round(statistics.fmean(cols[1]), 4),
                                      "hits@1": round(statistics.fmean(cols[2]), 4),
                                      "p50_ms": round(statistics.median(cols[3]), 2)}
        print(_table(rows))
        figures = {name: row["zero_shot"] | {"n": row["n"], "needs_filter": row["needs_filter"]}
                   for name, row in rows.items()}
        base_figures = {name: row["baseline"] for name, row in rows.items()}
        ratio = {name: round(row["zero_shot"]["f1"] / row["baseline"]["f1"], 3) if row["baseline"]["f1"] else None
                 for name, row in rows.items()}
        figures["fixture"] = report
        write_result("zero_shot_kg", figures, base_figures, ratio, "test (fixture from webqsp_100 + cwq_300)",
                     sum(rows[n]["n"] for n in ("webqsp", "cwq") if n in rows))
        store.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()

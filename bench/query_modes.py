"""Query modes side by side with LightRAG, and answer recall in context per mode.

Figures, in one run:
1. **kgrag vs LightRAG** (``lightrag-hku`` 1.5.7, ``make bench-install``) on the same data: a medical
   sub-network — the topic diseases of ``--questions`` seeded validation questions plus seeded other diseases
   up to ``--diseases`` records, with every symptom, drug, check, food, recipe and department they link to — is
   loaded into a fresh kgrag store and into LightRAG (``insert_custom_kg``): the same entities (name, type,
   description as kgrag's context shows it), relations (description, keywords, weight), chunks (ids, texts),
   the same embedding function (the network's embedder) and tokenizer (:class:`~kgrag.rank.token_count.TokenCounter`),
   the same preset keywords (kgrag's rules), ``only_need_context``, ``top_k`` 40, ``chunk_top_k`` 20, budgets
   6000/8000/30000. Per mode: context-build p50/p95 (ms, in-process, warm: one untimed query first; the two
   systems alternate which goes first) and answer recall in the context.
2. **Answer recall per mode on the full network** (``--db`` holding the medical network): the table a user reads
   to choose a mode — recall and context tokens per mode, kgrag only.

Questions: ``questions_cypher_train.json`` executed against the disease data (``kgrag.agent.training.gold``); the
validation split of :func:`kgrag.agent.training.train_intent.split_examples` (fraction 0.2, seed 0 — the intent ranker's),
topic type Disease, sampled with ``--seed``. Answer recall: ``any`` = share of questions with at least one gold
answer in the context; ``mean`` = mean share of a question's gold answers found. A gold answer "is in" the
context when it is a substring of it; answers longer than 30 characters (property texts such as causes) count
when their first 30 characters are.
Run: ``python -m bench.query_modes [--questions 100] [--diseases 800] [--db PATH] [--no-lightrag]``.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.common import percentiles, write_result
from kgrag.agent.training.gold import GoldExample, load_ce_prompt
from kgrag.agent.training.train_intent import split_examples
from kgrag.config import get_settings
from kgrag.data.medical import read_diseases
from kgrag.modes.index import ModeIndex
from kgrag.modes.keywords import rule_keywords
from kgrag.modes.params import QueryParam
from kgrag.modes.query import kg_query
from kgrag.network.loaders.medical import medical_from_diseases
from kgrag.network.store import NetworkStore
from kgrag.rank.token_count import TokenCounter

MODES = ("local", "global", "hybrid", "naive", "mix")
PREFIX = 30
SPLIT = ("validation split of the medical Cypher questions (split_examples fraction 0.2 seed 0), topic type "
         "Disease, seeded sample; sub-network = their topic diseases + seeded other diseases")


def progress(message: str) -> None:
    print(f"[query_modes] {message}", file=sys.stderr, flush=True)


def found(answer: str, context: str) -> bool:
    return (answer if len(answer) <= PREFIX else answer[:PREFIX]) in context


def recall(answers: tuple[str, ...], context: str) -> tuple[bool, float]:
    hits = [found(a, context) for a in answers]
    return any(hits), sum(hits) / len(hits)


def validation_examples(n: int, seed: int, names: set[str]) -> list[GoldExample]:
    settings = get_settings()
    examples, _ = load_ce_prompt(settings.data_dir / "medical" / "questions_cypher_train.json")
    _, validation, _ = split_examples(examples, 0.2, 0)
    pool = [examples[i] for i in validation if examples[i].target.topic_type == "Disease"
            and examples[i].topic in names]
    random.Random(seed).shuffle(pool)
    return pool[:n]


def network_embedder(name: str | None):  # noqa: ANN201
    """The embedder for the medical texts: ``--embedder``, else the trained domain model when present."""
    from kgrag.rank.embedder_factory import make_embedder

    settings = get_settings()
    if name is None:
        domain = settings.work_dir / "models" / "embeddings" / "medical"
        name = f"fasttext:{domain}" if domain.is_dir() else settings.embedder
    return make_embedder(name, settings.cache_dir)


def payload_from(index: ModeIndex):  # noqa: ANN201
    """kgrag's entities, relations and chunks in the neutral form LightRAG is loaded from."""
    from bench.lightrag_side import KGPayload

    first_chunk: dict[int, list[str]] = {}
    for c, doc in enumerate(index.chunk_docs):
        if doc >= 0:
            first_chunk.setdefault(int(doc), []).append(str(index.chunk_ids[c]))
    entities = [{"name": str(index.entity_names[e]), "type": index.type_ids[index.entity_types[e]],
                 "description": index.entity_description(e), "source_ids": first_chunk.get(e, [])}
                for e in range(len(index.entity_ids))]
    relations = []
    for edge in range(len(index.edge_src)):
        row = index.relation_row(edge)
        src = int(index.edge_src[edge])
        relations.append({"src": row["entity1"], "tgt": row["entity2"], "description": row["description"],
                          "keywords": row["keywords"], "weight": row["weight"],
                          "source_ids": first_chunk.get(src, [])[:1]})
    chunks = [{"id": str(index.chunk_ids[c]), "text": str(index.chunk_texts[c]),
               "doc_id": str(index.entity_ids[index.chunk_docs[c]])} for c in range(len(index.chunk_ids))]
    return KGPayload(entities=entities, relations=relations, chunks=chunks)


def kgrag_run(store: NetworkStore, kn_id: str, question: str, mode: str, hl: list[str], ll: list[str]
              ) -> tuple[str, float, int]:
    param = QueryParam(mode=mode, only_need_context=True, hl_keywords=hl, ll_keywords=ll or [question])
    start = time.perf_counter()
    result = kg_query(question, store, kn_id, param)
    seconds = time.perf_counter() - start
    tokens = result.raw_data["tokens"]
    return result.context, seconds, tokens["entities"] + tokens["relations"] + tokens["chunks"]


def side_by_side(args: argparse.Namespace, records: list, examples: list[GoldExample], embedder) -> dict:  # noqa: ANN001
    from bench.lightrag_side import build_lightrag_timed, close_lightrag, lightrag_context

    topics = {ex.topic for ex in examples}
    rng = random.Random(args.seed)
    others = [r for r in records if r.name not in topics]
    rng.shuffle(others)
    chosen = [r for r in records if r.name in topics] + others[: max(0, args.diseases - len(topics))]
    work = Path(tempfile.mkdtemp(prefix="bench-modes-"))
    store = NetworkStore(f"sqlite:///{work / 'kn.db'}")
    kn = "medical_bench"
    progress(f"loading {len(chosen)} diseases into kgrag ({embedder.model_name}) …")
    start = time.perf_counter()
    stats = store.load(*medical_from_diseases(chosen, kn_id=kn), embedder=embedder)
    index = ModeIndex.for_store(store, kn)
    kgrag_load = time.perf_counter() - start
    payload = payload_from(index)
    progress(f"kgrag: {stats.instances} entities, {stats.links} relations, {stats.chunks} chunks in "
             f"{kgrag_load:.1f} s; loading LightRAG …")
    rag, lightrag_load = build_lightrag_timed(payload, work / "lightrag", lambda t: embedder.encode(list(t)),
                                              embedder.dim, TokenCounter.default())
    progress(f"LightRAG loaded in {lightrag_load:.1f} s")
    keywords = [rule_keywords(ex.question, store, kn) for ex in examples]
    rows: dict[str, dict] = {}
    try:
        for mode in MODES:
            times = {"kgrag": [], "lightrag": []}
            hits = {"kgrag": [], "lightrag": []}
            tokens = []
            kgrag_run(store, kn, examples[0].question, mode, keywords[0].high_level, keywords[0].low_level)
            lightrag_context(rag, examples[0].question, mode, keywords[0].high_level, keywords[0].low_level or
                             [examples[0].question])
            for i, (ex, kw) in enumerate(zip(examples, keywords, strict=True)):
                ll = kw.low_level or [ex.question]
                order = ("kgrag", "lightrag") if i % 2 == 0 else ("lightrag", "kgrag")
                for system in order:
                    if system == "kgrag":
                        context, seconds, n_tokens = kgrag_run(store, kn, ex.question, mode, kw.high_level, ll)
                        tokens.append(n_tokens)
                    else:
                        context, seconds = lightrag_context(rag, ex.question, mode, kw.high_level, ll)
                    times[system].append(seconds)
                    hits[system].append(recall(ex.answers, context))
            rows[mode] = {
                system: {**percentiles(times[system]),
                         "recall_any": round(float(np.mean([h[0] for h in hits[system]])), 4),
                         "recall_mean": round(float(np.mean([h[1] for h in hits[system]])), 4)}
                for system in ("kgrag", "lightrag")
            }
            rows[mode]["kgrag"]["context_tokens_mean"] = round(float(np.mean(tokens)), 1)
            rows[mode]["time_ratio_p50"] = round(rows[mode]["kgrag"]["p50_ms"] / rows[mode]["lightrag"]["p50_ms"], 4)
            progress(f"{mode}: kgrag p50 {rows[mode]['kgrag']['p50_ms']:.2f} ms recall "
                     f"{rows[mode]['kgrag']['recall_any']:.3f} | LightRAG p50 {rows[mode]['lightrag']['p50_ms']:.2f} "
                     f"ms recall {rows[mode]['lightrag']['recall_any']:.3f}")
    finally:
        close_lightrag(rag)
        store.close()
    return {"modes": rows, "load_seconds": {"kgrag": round(kgrag_load, 2), "lightrag": round(lightrag_load, 2)},
            "sub_network": {"diseases": len(chosen), "entities": stats.instances, "relations": stats.links,
                            "chunks": stats.chunks}, "embedder": embedder.model_name}


def full_network(db: str, examples: list[GoldExample]) -> dict:
    store = NetworkStore(db)
    out = {}
    try:
        for mode in MODES:
            kgrag_run(store, "medical", examples[0].question, mode, [], [examples[0].question])
            times, hits, tokens = [], [], []
            for ex in examples:
                kw = rule_keywords(ex.question, store, "medical")
                context, seconds, n_tokens = kgrag_run(store, "medical", ex.question, mode, kw.high_level,
                                                       kw.low_level)
                times.append(seconds)
                hits.append(recall(ex.answers, context))
                tokens.append(n_tokens)
            out[mode] = {**percentiles(times), "recall_any": round(float(np.mean([h[0] for h in hits])), 4),
                         "recall_mean": round(float(np.mean([h[1] for h in hits])), 4),
                         "context_tokens_mean": round(float(np.mean(tokens)), 1)}
            progress(f"full network {mode}: recall {out[mode]['recall_any']:.3f} p50 {out[mode]['p50_ms']:.2f} ms")
    finally:
        store.close()
    return out


def print_tables(side: dict | None, full: dict | None, n: int) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    if side:
        table = Table(title=f"kgrag vs LightRAG 1.5.7 — context build, n={n} validation questions, "
                            f"{side['sub_network']['diseases']} diseases")
        for col in ("mode", "kgrag p50 ms", "kgrag p95 ms", "LightRAG p50 ms", "LightRAG p95 ms", "ratio p50",
                    "kgrag recall any/mean", "LightRAG recall any/mean"):
            table.add_column(col)
        for mode, r in side["modes"].items():
            k, lr = r["kgrag"], r["lightrag"]
            table.add_row(mode, f"{k['p50_ms']:.2f}", f"{k['p95_ms']:.2f}", f"{lr['p50_ms']:.2f}",
                          f"{lr['p95_ms']:.2f}", f"{r['time_ratio_p50']:.3f}",
                          f"{k['recall_any']:.3f} / {k['recall_mean']:.3f}",
                          f"{lr['recall_any']:.3f} / {lr['recall_mean']:.3f}")
        console.print(table)
    if full:
        table = Table(title=f"answer recall in context per mode — full medical network, n={n}")
        for col in ("mode", "recall any", "recall mean", "context tokens", "p50 ms", "p95 ms"):
            table.add_column(col)
        for mode, r in full.items():
            table.add_row(mode, f"{r['recall_any']:.3f}", f"{r['recall_mean']:.3f}", f"{r['context_tokens_mean']:.0f}",
                          f"{r['p50_ms']:.2f}", f"{r['p95_ms']:.2f}")
        console.print(table)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--questions", type=int, default=100)
    parser.add_argument("--diseases", type=int, default=800)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--db", default=None, help="store holding the full medical network (figure 2)")
    parser.add_argument("--embedder", default=None, help="embedder name (default: the medical domain model)")
    parser.add_argument("--no-lightrag", action="store_true")
    args = parser.parse_args(argv)
    settings = get_settings()
    records = read_diseases(settings.data_dir / "medical" / "diseases").records
    examples = validation_examples(args.questions, args.seed, {r.name for r in records})
    progress(f"{len(examples)} validation questions")
    embedder = network_embedder(args.embedder)
    side = None if args.no_lightrag else side_by_side(args, records, examples, embedder)
    full = full_network(args.db, examples) if args.db else None
    print_tables(side, full, len(examples))
    figures = {"full_network": full, "side_by_side": side}
    baseline = {m: r["lightrag"] for m, r in side["modes"].items()} if side else {}
    ratio = {m: r["time_ratio_p50"] for m, r in side["modes"].items()} if side else {}
    write_result("query_modes", figures, baseline, ratio, SPLIT, len(examples))


if __name__ == "__main__":
    main()

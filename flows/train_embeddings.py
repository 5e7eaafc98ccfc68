"""Domain-embedding training flow: a knowledge network's own text → FastText word vectors → probe table.

Thin wrapper of :mod:`kgrag.rank.train_domain`: reads every text of network ``kn_id``'s instances from the
store (``Settings.db_url``, :mod:`kgrag.network.domain_vectors`), trains FastText over jieba tokens with
:class:`DomainEmbeddingConfig` (defaults plus ``config`` overrides) into
``<work_dir>/models/embeddings/<kn_id>/`` (``meta.json`` + ``vectors.npz``, replaced atomically), then
evaluates: the instance names nearest (cosine, ``DomainEmbedder.similarity``) to a few probe words
(心梗 / 老慢支 / 感冒 for a Chinese network, else frequent vocabulary words) and, where instance texts say
"又称X" …, the alias → name recall@k. Publishes a markdown summary and a probe table as Prefect artifacts and
returns the model folder; use it with ``make_embedder("fasttext:<folder>")``.

Run: ``python -m flows.train_embeddings [--kn-id medical] [--config '{"epochs": 10}'] [--probes 心梗 感冒]``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from typing import Any

from prefect import flow, task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE

from flows.artifact_keys import artifact_key
from kgrag.config import get_settings
from kgrag.network.domain_vectors import instance_texts
from kgrag.network.store import NetworkStore
from kgrag.rank.domain import DomainEmbedder
from kgrag.rank.train_domain import (
    DomainEmbeddingConfig,
    alias_pairs,
    alias_recall,
    domain_model_dir,
    nearest_names,
    train_domain_embeddings,
)

CHINESE_PROBES = ("心梗", "老慢支", "感冒")
_CJK = re.compile(r"[\u4e00-\u9fff]")


@task(name="read-network-texts", cache_policy=NO_CACHE)
def read_texts(kn_id: str) -> dict[str, Any]:
    """Every text of the network's instances, the distinct instance names, and (name, text) records."""
    store = NetworkStore(get_settings().db_url)
    try:
        rows = instance_texts(store, kn_id)
    finally:
        store.close()
    texts: dict[str, None] = {}
    records = []
    for _type, name, props in rows:
        if name and name.strip():
            texts.setdefault(name.strip(), None)
        for strings in props.values():
            for text in strings:
                texts.setdefault(text, None)
                records.append((name, text))
    names = list(dict.fromkeys(name.strip() for _type, name, _props in rows if name and name.strip()))
    return {"texts": list(texts), "names": names, "records": records}


@task(name="train-domain-embeddings", cache_policy=NO_CACHE)
def train(texts: list[str], kn_id: str, config_json: str) -> str:
    folder = domain_model_dir(get_settings(), kn_id)
    # progress goes straight to stderr: print() inside a task becomes a Prefect INFO log, hidden at WARNING
    embedder = train_domain_embeddings(texts, folder, DomainEmbeddingConfig.model_validate_json(config_json),
                                       log=lambda line: sys.stderr.write(line + "\n"))
    return str(embedder.folder)


@task(name="evaluate-domain-embeddings", cache_policy=NO_CACHE)
def evaluate(folder: str, names: list[str], records: list[tuple[str, str]], probes: list[str] | None,
             k: int = 5) -> dict[str, Any]:
    embedder = DomainEmbedder(folder)
    if not probes:
        chinese = sum(bool(_CJK.search(name)) for name in names) > len(names) / 2
        probes = list(CHINESE_PROBES) if chinese else [
            w for w in embedder.meta["vocab"] if len(w) > 2 and not w.isdigit()][:3]
    start = time.perf_counter()
    table = nearest_names(embedder, probes, names, k=k)
    pairs = alias_pairs(records)
    aliases = alias_recall(embedder, pairs, names) if pairs else None
    return {"probes": probes, "table": table, "aliases": aliases,
            "seconds": round(time.perf_counter() - start, 3)}


def _summary_markdown(kn_id: str, folder: str, meta: dict[str, Any], evaluation: dict[str, Any]) -> str:
    corpus, timings = meta["corpus"], meta.get("timings", {})
    lines = [
        f"# Domain embeddings for `{kn_id}`", "",
        f"model `{folder}`, fingerprint `{meta['fingerprint'][:12]}`", "",
        "| texts | characters | sentences | tokens | vocabulary | dim | n-grams | tokenize s | train s |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        f"| {corpus.get('texts')} | {corpus.get('characters')} | {corpus.get('sentences')} "
        f"| {corpus.get('tokens')} "
        f"| {len(meta['vocab'])} | {meta['dim']} | {meta['min_n']}–{meta['max_n']} "
        f"| {timings.get('tokenize_seconds')} | {timings.get('train_seconds')} |", "",
        f"config `{json.dumps(meta['config'], ensure_ascii=False)}`", "",
    ]
    aliases = evaluation.get("aliases")
    if aliases and aliases["pairs"]:
        lines += ["## Alias → name (\"又称X\" … in the instance texts)", "",
                  "| pairs | recall@1 | recall@5 | recall@10 | median rank |", "|---:|---:|---:|---:|---:|",
                  f"| {aliases['pairs']} | {aliases['recall@1']:.3f} | {aliases['recall@5']:.3f} "
                  f"| {aliases['recall@10']:.3f} | {aliases['median_rank']} |", ""]
    lines += [f"## Nearest instance names ({len(evaluation['probes'])} probes; evaluation took "
              f"{evaluation['seconds']} s)", "", "| probe | rank | name | cosine |", "|---|---:|---|---:|"]
    lines += [f"| {r['probe']} | {r['rank']} | {r['name']} | {r['cosine']:.4f} |"
              for r in evaluation["table"]]
    return "\n".join(lines) + "\n"


@flow(name="train-embeddings", log_prints=True)
def train_embeddings(kn_id: str = "medical", config: dict[str, Any] | None = None,
                     probes: list[str] | None = None) -> str:
    """Train domain embeddings on network ``kn_id`` and evaluate them (see the module docstring); returns the
    model folder."""
    cfg = DomainEmbeddingConfig(**(config or {}))
    data = read_texts(kn_id)
    folder = train(data["texts"], kn_id, cfg.model_dump_json())
    evaluation = evaluate(folder, data["names"], data["records"], probes)
    meta = DomainEmbedder(folder).meta
    create_markdown_artifact(
        key=artifact_key("domain-embeddings", kn_id), description=f"Domain embeddings for {kn_id}",
        markdown=_summary_markdown(kn_id, folder, meta, evaluation))
    create_table_artifact(
        key=artifact_key("domain-embeddings", kn_id, "probes"), table=evaluation["table"],
        description=f"Nearest instance names to probe words ({kn_id})")
    return folder


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Train domain word embeddings on a network's own text.")
    parser.add_argument("--kn-id", default="medical")
    parser.add_argument("--config", default=None, help="JSON object of DomainEmbeddingConfig fields")
    parser.add_argument("--probes", nargs="*", default=None, help="probe words for the nearest-names table")
    args = parser.parse_args(argv)
    folder = train_embeddings(kn_id=args.kn_id, config=json.loads(args.config) if args.config else None,
                              probes=args.probes)
    print(folder)


if __name__ == "__main__":
    from flows import run_main

    run_main(main)

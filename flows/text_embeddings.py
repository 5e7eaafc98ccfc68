"""The graph's entity / relation name vectors (the retriever's and the policy's text features). Entity vectors are
lazy (:class:`~kgrag.hrag.retrieval.entity_vectors.EntityVectors`); for a graph of at most ``EAGER_ENTITIES`` entities this
flow fills the map at once, the missing names encoded as tasks (``entity-vectors-<i>of<n>``) over runs of whole
fixed-size blocks (:data:`~kgrag.hrag.retrieval.text.NAME_BLOCK`): one task on the default runner, a few per worker on Dask
(``KGRAG_TASK_RUNNER=dask``), stored into the shared map in order. A larger graph's vectors are computed when a
question's subgraph first touches them. Rows already computed are never re-encoded.

Run: ``python -m flows.text_embeddings --dataset metaqa`` (also a subflow of ``train-retriever``).
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from prefect import flow, task
from prefect.cache_policies import NO_CACHE

from kgrag.config import get_settings
from kgrag.hrag.retrieval import pipeline
from kgrag.hrag.retrieval.sharding import contiguous_ranges
from kgrag.hrag.retrieval.stage_inputs import load_graph
from kgrag.hrag.retrieval.text import NAME_BLOCK, TextEmbeddings, encode_names
from kgrag.ops.task_runner import limit_threads, on_task_runner, shards_for
from kgrag.rank.sentence_embedder import Embedder

#: graphs up to this many entities get every name vector at once; larger ones compute them as questions touch them
EAGER_ENTITIES = 200_000


@task(name="entity-vectors", cache_policy=NO_CACHE)
def entity_vectors(names: list[str], block: int) -> np.ndarray:
    """Unit float16 vectors of a run of whole blocks of entity names (on whichever worker runs it)."""
    settings = get_settings()
    limit_threads(settings)
    return encode_names(Embedder.from_settings(settings), names, block)


@flow(name="text-embeddings", log_prints=True)
def text_embeddings(dataset: str = "metaqa", shards: int | None = None, block: int = NAME_BLOCK) -> dict:
    """The dataset graph's name vectors (relations now; entities now for a small graph, else lazily); returns
    the map, its size, the rows encoded and the seconds."""
    settings = get_settings()
    graph = load_graph(settings, dataset)
    embedder = Embedder.from_settings(settings)
    started, tasks = time.perf_counter(), 0
    text = TextEmbeddings.for_graph(graph, pipeline.hrag_dir(settings, dataset), embedder)
    vectors = text.entities

    def in_blocks(missing: np.ndarray) -> None:
        nonlocal tasks
        all_names = graph.names_of(missing)  # decoded once
        named = missing[np.array([bool(n) for n in all_names], dtype=bool)]
        names = [n for n in all_names if n]
        starts = range(0, len(names), block)
        ranges = [(a * block, min(b * block, len(names)))
                  for a, b in contiguous_ranges([sum(map(len, names[s : s + block])) for s in starts],
                                                shards or shards_for(settings))]
        tasks = len(ranges)
        futures = [entity_vectors.with_options(task_run_name=f"entity-vectors-{k + 1}of{len(ranges)}")
                   .submit(names[a:b], block) for k, (a, b) in enumerate(ranges)]
        for (a, b), future in zip(ranges, futures, strict=True):
            vectors.store(named[a:b], future.result())
        unnamed = np.setdiff1d(missing, named)
        vectors.store(unnamed, np.zeros((unnamed.size, vectors.dim), dtype=np.float16))

    eager = graph.num_entities <= EAGER_ENTITIES
    encoded = 0
    if eager:
        missing = vectors.missing()
        in_blocks(missing)
        vectors.flush()
        encoded = int(missing.size)
    return {"file": str(vectors.path), "entities": int(vectors.shape[0]), "relations": int(text.relations.shape[0]),
            "computed": vectors.computed(), "encoded_now": encoded, "eager": eager, "tasks": tasks,
            "seconds": round(time.perf_counter() - started, 2)}


def run(dataset: str, shards: int | None = None, block: int = NAME_BLOCK) -> dict:
    """The flow on the configured task runner."""
    return on_task_runner(text_embeddings)(dataset, shards, block)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Encode the graph's entity and relation names.")
    parser.add_argument("--dataset", default="metaqa")
    parser.add_argument("--shards", type=int, default=None)
    args = parser.parse_args(argv)
    print(json.dumps(run(args.dataset, args.shards)))


if __name__ == "__main__":
    from flows import run_main

    run_main(main)

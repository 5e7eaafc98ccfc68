"""The graph's entity / relation name vectors (the retriever's and the policy's text features), with the entity
names encoded as tasks (``entity-vectors-<i>of<n>``) over runs of whole fixed-size blocks of names
(:data:`~kgrag.hrag.text.NAME_BLOCK`, the unit the one-process build encodes too): one task on the default runner,
a few per worker on Dask (``KGRAG_TASK_RUNNER=dask``), joined in order into the file
:class:`kgrag.hrag.text.TextEmbeddings` reads. A graph whose vectors exist is read, not re-encoded.

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
from kgrag.hrag import pipeline
from kgrag.hrag.sharding import contiguous_ranges
from kgrag.hrag.text import NAME_BLOCK, TextEmbeddings, encode_names, text_file
from kgrag.ops.task_runner import limit_threads, on_task_runner, shards_for
from kgrag.rank.sentence_embedder import Embedder


@task(name="entity-vectors", cache_policy=NO_CACHE)
def entity_vectors(names: list[str], block: int) -> np.ndarray:
    """Unit float16 vectors of a run of whole blocks of entity names (on whichever worker runs it)."""
    settings = get_settings()
    limit_threads(settings)
    return encode_names(Embedder.from_settings(settings), names, block)


@flow(name="text-embeddings", log_prints=True)
def text_embeddings(dataset: str = "metaqa", shards: int | None = None, block: int = NAME_BLOCK) -> dict:
    """The dataset graph's name vectors (built when missing); returns the file, its size and the seconds."""
    settings = get_settings()
    graph = pipeline.load_graph(settings, dataset)
    embedder = Embedder.from_settings(settings)
    path = text_file(graph, pipeline.hrag_dir(settings, dataset), embedder.model_name)
    built, tasks, started = not path.is_file(), 0, time.perf_counter()

    def in_blocks(names: list[str]) -> np.ndarray:
        nonlocal tasks
        starts = range(0, len(names), block)
        ranges = [(a * block, min(b * block, len(names)))
                  for a, b in contiguous_ranges([sum(map(len, names[s : s + block])) for s in starts],
                                                shards or shards_for(settings))]
        tasks = len(ranges)
        futures = [entity_vectors.with_options(task_run_name=f"entity-vectors-{k + 1}of{len(ranges)}")
                   .submit(names[a:b], block) for k, (a, b) in enumerate(ranges)]
        return np.concatenate([f.result() for f in futures])

    text = TextEmbeddings.for_graph(graph, pipeline.hrag_dir(settings, dataset), embedder, names_encoder=in_blocks)
    return {"file": str(path), "entities": int(text.entities.shape[0]), "relations": int(text.relations.shape[0]),
            "built": built, "tasks": tasks, "seconds": round(time.perf_counter() - started, 2)}


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

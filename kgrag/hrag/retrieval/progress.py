"""Progress of the H-RAG stages' long loops: a tqdm bar on stderr, shown only on a terminal (``disable=None``: off
in logs, tests and Dask workers, where it costs nothing per item) and only once a loop has run ``DELAY`` seconds
(a reasoner answering one question shows none); the bar goes when the loop ends.

    for i in counted(range(n), "g_agent (test)", "question"): ...
    with counter("G_retrieval (test, PPR)", "topic set") as progress:
        build_samples(graph, questions, progress=progress)          # progress(done, total) after each batch
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from tqdm.auto import tqdm

__all__ = ["DELAY", "counted", "counter"]

T = TypeVar("T")

#: seconds a loop runs before its bar appears
DELAY = 2.0


def counted(items: Iterable[T], desc: str, unit: str, total: int | None = None) -> Iterable[T]:
    """``items``, counted on a bar (``total`` when ``items`` has no length)."""
    return tqdm(items, desc=desc, unit=unit, total=total, leave=False, disable=None, delay=DELAY)


@contextmanager
def counter(desc: str, unit: str) -> Iterator[Callable[[int, int], None]]:
    """A ``progress(done, total)`` callback (what :func:`~kgrag.hrag.retrieval.samples.build_samples` and the
    other batched loops call) drawing a bar."""
    with tqdm(desc=desc, unit=unit, leave=False, disable=None, delay=DELAY) as bar:

        def progress(done: int, total: int) -> None:
            bar.total = total
            bar.update(done - bar.n)

        yield progress

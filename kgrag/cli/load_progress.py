"""A load's stages as live progress bars on stderr (rows, links, full-text index, deferred vectors, ANN bases:
done / total, rate, time left), for ``kgrag kn load`` / ``kn sync``.

    with load_progress() as progress:
        store.load(network, instances, links, progress=progress)    # progress(stage, done, total)

Off a terminal (a log file, a pipe) nothing is drawn; each stage's end is printed as one line instead.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeRemainingColumn

from kgrag.cli.output import err_console

__all__ = ["STAGES", "load_progress"]

#: what each stage of :meth:`kgrag.network.store.load.StoreLoader.load` does, as its bar says it
STAGES = {"instances": "instances (rows, tokens, vectors)", "rows": "instances (rows, tokens; no vectors)",
          "links": "links", "index": "full-text index",
          "vectors": "vectors (deferred, instances)", "ann": "ANN bases (big object types)"}
#: the stages that count rows (their bars show a rate, their end line the count)
COUNTED = frozenset({"instances", "rows", "links", "vectors"})


@contextmanager
def load_progress() -> Iterator:
    """A ``progress(stage, done, total)`` callback drawing one bar per stage (see the module docstring)."""
    live = err_console.is_terminal
    bars = Progress(TextColumn("{task.description:<36}"), BarColumn(), MofNCompleteColumn(),
                    TextColumn("{task.fields[rate]}"), TimeRemainingColumn(), console=err_console,
                    disable=not live, transient=False)
    tasks: dict[str, tuple[TaskID, float]] = {}
    finished: set[str] = set()

    def progress(stage: str, done: int, total: int) -> None:
        if stage not in tasks:
            tasks[stage] = (bars.add_task(STAGES.get(stage, stage), total=max(total, 1), rate=""), time.monotonic())
        task, started = tasks[stage]
        seconds = max(time.monotonic() - started, 1e-9)
        rate = f"{done / seconds:,.0f}/s" if done and stage in COUNTED else ""
        bars.update(task, completed=done, total=max(total, 1), rate=rate)
        if done >= total and not live and stage not in finished:
            finished.add(stage)
            counted = f"{done:,} " if stage in COUNTED else ""
            err_console.print(f"{STAGES.get(stage, stage)}: {counted}done in {seconds:.1f} s", highlight=False)

    with bars:
        yield progress

"""Progress of long loops (an import, the H-RAG stages), wherever their output goes: nothing runs silent for more than
:data:`INTERVAL` seconds once a loop has run :data:`DELAY` seconds.

- **a terminal** (stderr is a tty): a tqdm bar (done / total, rate, ETA), gone when the loop ends;
- **a file or a pipe** (a log, CI, ``nohup``): a plain line every :data:`INTERVAL` seconds, written by a heartbeat
  thread, so a single slow item (one model call) cannot make the stage look dead, and one last line at the end:
  ``progress: g_agent (validation): 1,200/3,913 questions (30.7 %), 85.3/s, ETA 32 s``;
- **inside a Prefect flow or task run**: the same lines also go to the run's logger, and the loop keeps a
  progress artifact (``progress-<desc>``) at its percentage, seen on the run's page in the Prefect UI.

``KGRAG_PROGRESS`` forces a mode: ``bar``, ``lines`` or ``off``. A loop that ends within :data:`DELAY` seconds
(a reasoner answering one question) shows nothing anywhere.

    for i in counted(range(n), "g_agent (test)", "question"): ...
    with counter("G_retrieval (test, PPR)", "topic set") as progress:
        build_samples(graph, questions, progress=progress)          # progress(done, total) after each batch
    with counter("loading the sentence model", "step"): ...          # no total: elapsed time only
"""

from __future__ import annotations

import os
import re
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO, TypeVar

__all__ = ["DELAY", "INTERVAL", "Progress", "counted", "counter", "progress_line", "stage"]

T = TypeVar("T")

#: seconds a loop runs before anything is shown
DELAY = 2.0
#: seconds between two plain lines (a file, a pipe, a Prefect log)
INTERVAL = 5.0


def _mode(stream: TextIO) -> str:
    forced = os.environ.get("KGRAG_PROGRESS", "").strip().lower()
    if forced in ("bar", "lines", "off"):
        return forced
    try:
        return "bar" if stream.isatty() else "lines"
    except (AttributeError, ValueError):  # a closed or odd stream
        return "lines"


def _seconds(s: float) -> str:
    s = int(round(s))
    return f"{s // 3600} h {s % 3600 // 60:02d} min" if s >= 3600 else f"{s // 60} min {s % 60:02d} s" if s >= 60 \
        else f"{s} s"


def progress_line(desc: str, unit: str, done: int, total: int | None, elapsed: float) -> str:
    """One plain progress line: done / total, share, rate and ETA (elapsed time alone without a total)."""
    rate = done / elapsed if elapsed > 0 else 0.0
    plural = (total or done) != 1 and not unit.endswith("s") and not unit.isupper()  # MB stays MB
    units = unit + ("es" if unit.endswith(("ch", "sh", "x")) else "s") if plural else unit
    if total:
        eta = (total - done) / rate if rate > 0 else None
        return (f"progress: {desc}: {done:,}/{total:,} {units} ({100 * done / total:.1f} %), {rate:,.1f}/s, "
                f"ETA {_seconds(eta) if eta is not None else '?'}")
    if not done:
        return f"progress: {desc}: running for {_seconds(elapsed)}"
    return f"progress: {desc}: {done:,} {units} in {_seconds(elapsed)}, {rate:,.1f}/s"


def _prefect_run() -> Any:
    """The Prefect run logger when this thread runs inside a flow or task run, else None (Prefect not imported:
    no run can be active, and importing it here would cost seconds)."""
    if "prefect" not in sys.modules:
        return None
    try:
        from prefect.context import FlowRunContext, TaskRunContext
        from prefect.logging import get_run_logger

        if FlowRunContext.get() is None and TaskRunContext.get() is None:
            return None
        return get_run_logger()
    except Exception:  # noqa: BLE001 - progress never breaks the stage it reports on
        return None


#: when the last progress line was written (by any loop): a whole command's heartbeat (:func:`stage`) speaks only
#: when nothing else has for an interval
_last_line = [time.monotonic()]


class Progress:
    """``update(done, total)`` from the loop; shown as the module docstring says. A context manager: the bar, the
    heartbeat and the artifact end with it."""

    def __init__(self, desc: str, unit: str, total: int | None = None, stream: TextIO | None = None,
                 delay: float = DELAY, interval: float = INTERVAL, background: bool = False) -> None:
        self.desc, self.unit, self.total, self.done = desc, unit, total, 0
        self.stream = stream or sys.stderr
        self.delay, self.interval = delay, interval
        self.mode = _mode(self.stream)
        if background and self.mode == "bar":  # a terminal shows the command's own output and inner bars
            self.mode = "off"
        self.background = background  # a line only when no other loop wrote one for an interval
        self.started = time.monotonic()
        self.lines = 0  # plain lines written (what the tests read)
        self._bar: Any = None
        self._logger = None
        self._artifact: Any = None  # the artifact's id once created; False when it could not be
        self._artifact_at = 0.0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Progress:
        if self.mode == "bar":
            from tqdm.auto import tqdm  # here: a command that never shows a bar does not import it

            self._bar = tqdm(desc=self.desc, unit=self.unit, total=self.total, leave=False, delay=self.delay,
                             file=self.stream)
        elif self.mode == "lines":
            self._logger = _prefect_run()
            self._thread = threading.Thread(target=self._beat, name=f"progress-{self.desc}", daemon=True)
            self._thread.start()
        return self

    def update(self, done: int, total: int | None = None) -> None:
        with self._lock:
            self.done = done
            if total is not None:
                self.total = total
        if self._bar is not None:
            if total is not None and self._bar.total != total:
                self._bar.total = total
            self._bar.update(done - self._bar.n)
        elif self._logger is not None:
            self._artifact_progress()

    def __call__(self, done: int, total: int | None = None) -> None:
        self.update(done, total)

    def _beat(self) -> None:
        if self._stop.wait(self.delay):
            return
        while True:
            if not self.background or time.monotonic() - _last_line[0] >= 0.9 * self.interval:
                self._emit()
            if self._stop.wait(self.interval):
                return

    def _emit(self) -> None:
        with self._lock:
            line = progress_line(self.desc, self.unit, self.done, self.total, time.monotonic() - self.started)
            self.lines += 1
        try:
            self.stream.write(line + "\n")
            self.stream.flush()
        except (ValueError, OSError):  # the stream was closed under us (the process is ending)
            return
        _last_line[0] = time.monotonic()
        if self._logger is not None:
            self._logger.info(line)

    def _artifact_progress(self, final: bool = False) -> None:
        """Create, then keep at the current percentage, the run's progress artifact (at most every interval)."""
        now = time.monotonic()
        if self._artifact is False or not self.total:
            return
        if not final and (now - self.started < self.delay or now - self._artifact_at < self.interval):
            return
        self._artifact_at = now
        share = min(100.0, 100.0 * self.done / self.total)
        try:
            from prefect.artifacts import create_progress_artifact, update_progress_artifact

            if self._artifact is None:
                key = "progress-" + re.sub(r"[^a-z0-9]+", "-", self.desc.lower()).strip("-")
                self._artifact = create_progress_artifact(share, key=key[:100], description=self.desc)
            else:
                update_progress_artifact(self._artifact, share)
        except Exception:  # noqa: BLE001 - no server, a closed client: the lines still show the progress
            self._artifact = False

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None
            if time.monotonic() - self.started >= self.delay and not self.background:
                self._emit()  # the last line: what was done, at what rate
            if self._artifact:
                self._artifact_progress(final=True)

    def __exit__(self, *exc: object) -> None:
        self.close()


def counted(items: Iterable[T], desc: str, unit: str, total: int | None = None) -> Iterator[T]:
    """``items``, counted (``total`` defaults to ``len(items)``)."""
    if total is None:
        try:
            total = len(items)  # type: ignore[arg-type]
        except TypeError:
            total = None
    if _mode(sys.stderr) == "off":
        yield from items
        return
    with Progress(desc, unit, total) as progress:
        for done, item in enumerate(items, 1):
            yield item
            progress.update(done)


@contextmanager
def counter(desc: str, unit: str, total: int | None = None) -> Iterator[Callable[..., None]]:
    """A ``progress(done, total)`` callback (what :func:`~kgrag.hrag.retrieval.samples.build_samples` and the
    other batched loops call), shown as the module docstring says; with no call at all, elapsed time."""
    if _mode(sys.stderr) == "off":
        yield lambda done, total=None: None
        return
    with Progress(desc, unit, total) as progress:
        yield progress


@contextmanager
def stage(desc: str, delay: float = INTERVAL, interval: float = INTERVAL) -> Iterator[None]:
    """A whole command's heartbeat in a file or a pipe: ``progress: <desc>: running for 1 min 05 s`` whenever no
    loop inside it has written a line for an interval (starting a Prefect server, loading a model, a step
    without a loop of its own), the first after ``delay`` (a command that fails at once says only why);
    nothing on a terminal."""
    if _mode(sys.stderr) != "lines":
        yield
        return
    with Progress(desc, "step", delay=delay, interval=interval, background=True):
        yield

"""Progress of long loops: a loop that ends within DELAY seconds shows nothing; a longer one writes plain
lines (done / total, rate, ETA) to a file or a pipe, at most INTERVAL seconds apart even while one item takes
long, and one last line; inside a Prefect flow run the lines go to its log and a progress artifact follows it."""

from __future__ import annotations

import asyncio
import io
import threading
import time

import pytest

from kgrag.progress import Progress, counted, counter, progress_line


def test_counted_yields_the_items_and_a_short_loop_prints_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    assert list(counted(range(5), "questions", "question")) == [0, 1, 2, 3, 4]
    assert list(counted(iter("abc"), "letters", "letter", total=3)) == ["a", "b", "c"]
    with counter("G_retrieval (test, PPR)", "topic set") as progress:
        for done in (2, 4, 5):
            progress(done, 5)
    assert capsys.readouterr().err == ""


def test_the_line_says_done_total_share_rate_and_eta() -> None:
    line = progress_line("g_agent (validation)", "question", 1200, 3913, 10.0)
    assert line == "progress: g_agent (validation): 1,200/3,913 questions (30.7 %), 120.0/s, ETA 23 s"
    assert progress_line("retriever epoch 1", "batch", 3, 63, 30.0).endswith("3/63 batches (4.8 %), 0.1/s, ETA 10 min 00 s")
    assert progress_line("loading", "step", 0, None, 75.0) == "progress: loading: running for 1 min 15 s"
    assert "15/255 MB (5.9 %)" in progress_line("reading", "MB", 15, 255, 2.0)
    assert progress_line("reading", "line", 300, None, 3.0) == "progress: reading: 300 lines in 3 s, 100.0/s"


class _Pipe(io.StringIO):
    def isatty(self) -> bool:
        return False


def test_a_long_item_off_a_terminal_still_gets_a_line_every_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    """One item that takes 0.5 s with a 0.1 s interval: the heartbeat writes several lines meanwhile, then the
    last line says all was done."""
    monkeypatch.delenv("KGRAG_PROGRESS", raising=False)
    out = _Pipe()
    with Progress("slow stage", "question", 2, stream=out, delay=0.05, interval=0.1) as progress:
        progress.update(1)
        time.sleep(0.5)
        progress.update(2)
    lines = out.getvalue().splitlines()
    assert len(lines) >= 4, lines
    assert all(line.startswith("progress: slow stage: ") for line in lines)
    assert "1/2 questions (50.0 %)" in lines[0]
    assert "2/2 questions (100.0 %)" in lines[-1]
    assert not [t for t in threading.enumerate() if t.name.startswith("progress-")]  # the heartbeat ended


def test_kgrag_progress_off_silences_and_lines_forces_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KGRAG_PROGRESS", "off")
    out = _Pipe()
    assert list(counted(range(3), "x", "item")) == [0, 1, 2]
    monkeypatch.setenv("KGRAG_PROGRESS", "lines")
    tty = io.StringIO()
    tty.isatty = lambda: True  # type: ignore[method-assign]
    with Progress("forced", "item", 1, stream=tty, delay=0.0, interval=0.05) as progress:
        time.sleep(0.12)
        progress.update(1)
    assert tty.getvalue().startswith("progress: forced: ")
    assert out.getvalue() == ""


def test_in_a_prefect_flow_the_lines_reach_the_run_log_and_a_progress_artifact(
        prefect_harness, monkeypatch: pytest.MonkeyPatch) -> None:
    from prefect import flow
    from prefect.client.orchestration import get_client

    monkeypatch.setenv("KGRAG_PROGRESS", "lines")
    import logging

    runs = logging.getLogger("prefect.flow_runs")  # make test runs Prefect at WARNING (the Makefile's default)
    level = runs.level
    runs.setLevel(logging.INFO)  # setLevel, not the attribute: it clears the loggers' is-enabled caches
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    keep = Keep(logging.INFO)
    runs.addHandler(keep)

    @flow(name="progress-probe")
    def probe() -> None:
        with Progress("probe loop", "item", 4, stream=_Pipe(), delay=0.0, interval=0.05) as progress:
            for done in range(1, 5):
                time.sleep(0.06)
                progress.update(done)

    try:
        run_id = probe(return_state=True).state_details.flow_run_id
    finally:
        runs.removeHandler(keep)
        runs.setLevel(level)
    lines = [r for r in records if r.getMessage().startswith("progress: probe loop: ")]
    assert lines and all(str(getattr(r, "flow_run_id", "")) == str(run_id) for r in lines)  # the run's own log

    async def read() -> list:
        from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

        async with get_client() as client:
            return await client.read_artifacts(artifact_filter=ArtifactFilter(
                flow_run_id=ArtifactFilterFlowRunId(any_=[run_id])))

    found = asyncio.run(read())
    progress = [a for a in found if a.type == "progress"]
    assert progress and progress[0].key == "progress-probe-loop" and float(progress[0].data) == 100.0


def test_the_import_tells_the_bytes_it_has_read_and_closes_what_it_opened(tmp_path) -> None:
    """A 6 MB N-Triples file (plain and gzipped): ``on_bytes`` rises by the megabyte to at most the file's size
    (on disk: compressed bytes for the gzip), and the triples read are the same as without it."""
    import gzip

    from kgrag.data.triples import read_triple_files

    lines = "".join(f"<http://x/e{i}> <http://x/r{i % 7}> <http://x/e{(i * 7919) % 40000}> .\n" for i in range(90000))
    plain = tmp_path / "g.nt"
    plain.write_text(lines)
    packed = tmp_path / "g.nt.gz"
    packed.write_bytes(gzip.compress(lines.encode(), compresslevel=1))
    for path in (plain, packed):
        told: list[int] = []
        counted_read = read_triple_files([path], on_bytes=told.append)
        assert told == sorted(told) and (told[-1] <= path.stat().st_size if told else True)
        assert len(counted_read.head) == len(read_triple_files([path]).head) == 90000
    told = []
    read_triple_files([plain], on_bytes=told.append)
    assert len(told) >= 2 and told[0] >= 1 << 20


def test_a_commands_heartbeat_speaks_only_when_its_loops_are_quiet(monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """``stage``: 0.3 s with nothing else → "running for" lines; then a loop writing its own lines every 0.05 s
    for 0.3 s → the stage adds none meanwhile."""
    from kgrag.progress import stage

    monkeypatch.setenv("KGRAG_PROGRESS", "lines")
    with stage("kgrag prepare --dataset x", delay=0.02, interval=0.1):
        time.sleep(0.35)
        quiet = capsys.readouterr().err.splitlines()
        with Progress("inner loop", "item", 10, delay=0.0, interval=0.05) as progress:
            for done in range(1, 7):
                time.sleep(0.05)
                progress.update(done)
        busy = capsys.readouterr().err.splitlines()
    assert len(quiet) >= 2 and all(line.startswith("progress: kgrag prepare --dataset x: running for") for line in quiet)
    assert busy and all(line.startswith("progress: inner loop: ") for line in busy), busy

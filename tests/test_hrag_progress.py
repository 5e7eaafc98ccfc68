"""The H-RAG stages' progress bars: the loops yield what they did, and off a terminal nothing is printed."""

from __future__ import annotations

import pytest

from kgrag.hrag.retrieval.progress import counted, counter


def test_counted_yields_the_items_and_prints_nothing_off_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    assert list(counted(range(5), "questions", "question")) == [0, 1, 2, 3, 4]
    assert list(counted(iter("abc"), "letters", "letter", total=3)) == ["a", "b", "c"]
    assert capsys.readouterr().err == ""


def test_counter_takes_done_and_total_and_prints_nothing_off_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    with counter("G_retrieval (test, PPR)", "topic set") as progress:
        for done in (2, 4, 5):
            progress(done, 5)
    assert capsys.readouterr().err == ""

"""An H-RAG stage whose input an earlier stage writes ends in one line naming the missing file and the command
that writes it, never in a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kgrag.errors import KgragError
from kgrag.hrag.retrieval import pipeline
from kgrag.hrag.retrieval.questions import prepared_questions
from kgrag.hrag.retrieval.stage_inputs import MissingStageInput, stage_input


def test_stage_input_is_the_path_when_it_is_there(tmp_path: Path) -> None:
    path = tmp_path / "graph.npz"
    path.write_bytes(b"")
    assert stage_input(str(path), "kgrag prepare --dataset demo") == path


def test_a_missing_input_names_the_file_and_the_command(tmp_path: Path) -> None:
    with pytest.raises(MissingStageInput) as raised:
        stage_input(tmp_path / "graph.npz", "kgrag prepare --dataset demo")
    assert isinstance(raised.value, KgragError)  # what the CLI prints in one line
    assert str(raised.value) == f"{tmp_path / 'graph.npz'} not found: run `kgrag prepare --dataset demo` first"


def test_unprepared_questions_name_kgrag_prepare(tmp_path: Path) -> None:
    with pytest.raises(MissingStageInput, match=r"questions\.jsonl not found: run `kgrag prepare --dataset demo`"):
        prepared_questions(tmp_path / "demo")


def test_missing_g_agent_and_checkpoints_name_the_stage_that_writes_them(work_settings, tmp_path: Path) -> None:
    with pytest.raises(MissingStageInput, match=r"train_g_agent\.pt not found: run `kgrag retriever-eval --dataset demo`"):
        pipeline.g_agent_input(work_settings, "demo", "train")
    with pytest.raises(MissingStageInput, match=r"mine\.pt not found: run `kgrag retriever-eval --dataset demo`"):
        pipeline.g_agent_input(work_settings, "demo", "train", tmp_path / "mine.pt")
    with pytest.raises(MissingStageInput, match=r"best\.pt not found: run `kgrag train-gflownet --dataset demo`"):
        pipeline.checkpoint_input(work_settings, "demo", tmp_path / "best.pt", kind="gflownet")
    with pytest.raises(KgragError, match=r"no trained retriever .* run `kgrag train-retriever --dataset demo`"):
        pipeline.checkpoint_input(work_settings, "demo", None)


def test_train_gflownet_without_g_agent_is_one_line_naming_retriever_eval(work_settings) -> None:
    """The interrupted ``retriever-eval`` case: ``kgrag train-gflownet`` in a work dir without g_agent files."""
    proc = subprocess.run([sys.executable, "-m", "kgrag.cli", "train-gflownet", "--dataset", "demo"],
                          capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "80"})
    lines = [line for line in proc.stderr.splitlines() if line.strip() and not line.startswith("progress: ")]
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr  # no Prefect log, no traceback
    missing = work_settings.dataset_dir("demo") / "hrag" / "g_agent" / "train_g_agent.pt"
    assert lines[0] == f"error: {missing} not found: run `kgrag retriever-eval --dataset demo` first"

"""CLI smoke: every command has --help; errors are one clear line, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from kgrag.cli import app

runner = CliRunner()
COMMANDS = [[], ["prepare"], ["run"], ["sparql"], ["serve"], ["config"], ["data"], ["data", "list"], ["data", "download"]]


@pytest.mark.parametrize("cmd", COMMANDS, ids=lambda c: " ".join(c) or "kgrag")
def test_help_everywhere(cmd):
    res = runner.invoke(app, [*cmd, "--help"])
    assert res.exit_code == 0, res.output
    assert "Usage" in res.output


def test_top_level_help_lists_every_command():
    out = runner.invoke(app, ["--help"]).output
    for name in ("prepare", "run", "sparql", "serve", "config", "data"):
        assert name in out


def test_prepare_help_shows_choices_and_default():
    out = runner.invoke(app, ["prepare", "--help"]).output
    assert "demo" in out and "metaqa" in out and "medical" in out and "default" in out.lower()


def test_download_fails_with_a_clear_message(tmp_path):
    res = runner.invoke(app, ["data", "download", "metaqa", "--dest", str(tmp_path), "--timeout", "2"])
    assert res.exit_code == 1
    assert "error:" in res.output and "KGRAG_DATA_DIR" in res.output
    assert "Traceback" not in res.output


def test_download_unknown_name(tmp_path):
    res = runner.invoke(app, ["data", "download", "wikidata", "--dest", str(tmp_path)])
    assert res.exit_code == 1 and "metaqa" in res.output


def test_missing_data_dir_is_one_clear_line(work_settings, monkeypatch, tmp_path):
    monkeypatch.setenv("KGRAG_DATA_DIR", str(tmp_path / "missing"))
    proc = subprocess.run([sys.executable, "-m", "flows.prepare_data", "--dataset", "metaqa"],
                          capture_output=True, text=True, timeout=300)
    assert "KGRAG_DATA_DIR" in _the_one_error_line(proc)  # python -m flows.…: one line too, no traceback


def test_config_masks_the_key(monkeypatch):
    from kgrag.config import get_settings

    monkeypatch.setenv("KGRAG_LLM_API_KEY", "sk-secret")
    get_settings.cache_clear()
    try:
        out = runner.invoke(app, ["config"]).output
    finally:
        get_settings.cache_clear()
    assert "KGRAG_LLM_API_KEY=***" in out and "sk-secret" not in out


def test_console_script_is_installed():
    proc = subprocess.run([sys.executable, "-m", "kgrag.cli", "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "prepare" in proc.stdout


def _kgrag(*args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    """``python -m kgrag.cli ARGS`` as a user runs it (80 columns, stderr as the terminal gets it)."""
    return subprocess.run([sys.executable, "-m", "kgrag.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "COLUMNS": "80"})


def _the_one_error_line(proc: subprocess.CompletedProcess) -> str:
    """The error, one line; besides it only the command's progress lines (a slow machine may show them)."""
    lines = [line for line in proc.stderr.splitlines() if line.strip() and not line.startswith("progress: ")]
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr  # no Prefect log, no traceback
    return lines[0]


def test_prepare_missing_data_file_is_one_line_without_prefect_traceback(work_settings, tmp_path):
    data = tmp_path / "data"
    (data / "metaqa" / "1-hop").mkdir(parents=True)  # the dataset folder is there, its kb.txt is not
    (data / "metaqa" / "1-hop" / "dev.txt").write_text("what did [X] direct\tY\n", encoding="utf-8")
    line = _the_one_error_line(_kgrag("prepare", "--dataset", "metaqa", "--data-dir", str(data)))
    assert "kb.txt" in line and "kgrag data download metaqa" in line


def test_eval_without_checkpoints_is_one_line_without_prefect_traceback(work_settings):
    line = _the_one_error_line(_kgrag("eval", "--dataset", "demo"))  # a fresh work dir: nothing trained
    assert "no trained" in line and "kgrag train-" in line


@pytest.mark.parametrize("command", ["eval", "retriever-eval"])
def test_a_missing_question_file_is_named_before_checkpoints(work_settings, tmp_path, command):
    missing = tmp_path / "no-such-questions.txt"
    res = runner.invoke(app, [command, "--questions", str(missing)])
    assert res.exit_code == 1 and f"question file not found: {missing}" in res.output, res.output
    assert "checkpoint" not in res.output and "train-" not in res.output


def test_config_masks_every_api_key(monkeypatch):
    from kgrag.config import get_settings

    for var, value in (("KGRAG_LLM_API_KEY", "sk-llm"), ("KGRAG_RERANK_API_KEY", "sk-rerank"),
                       ("KGRAG_API_KEY", "sk-http")):
        monkeypatch.setenv(var, value)
    get_settings.cache_clear()
    try:
        out = runner.invoke(app, ["config"]).output
    finally:
        get_settings.cache_clear()
    assert "sk-" not in out
    for var in ("KGRAG_LLM_API_KEY", "KGRAG_RERANK_API_KEY", "KGRAG_API_KEY"):
        assert f"{var}=***" in out


def test_every_setting_kgrag_config_shows_is_in_the_settings_table():
    from pathlib import Path

    from kgrag.config import Settings

    page = Path(__file__).resolve().parent.parent / "docs" / "reference" / "configuration.md"
    rows = [line for line in page.read_text(encoding="utf-8").splitlines() if line.startswith("| `KGRAG_")]
    missing = [f"KGRAG_{name.upper()}" for name in Settings.model_fields
               if not any(f"`KGRAG_{name.upper()}`" in row for row in rows)]
    assert not missing, f"settings kgrag config prints that {page.name}'s settings table does not document: {missing}"


def test_readme_and_docs_stay_inside_the_repository():
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    pages = [root / "README.md", *sorted((root / "docs").rglob("*.md"))]
    # a user's checkout has no ../shared: the data dir is a setting
    assert not [p.name for p in pages if "../shared" in p.read_text(encoding="utf-8")]


def test_deploy_commands_work_through_python_m():
    proc = subprocess.run([sys.executable, "-m", "kgrag.cli", "deploy", "list"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "data-daily" in proc.stdout


"""CLI smoke: every command has --help; errors are one clear line, never a traceback."""

from __future__ import annotations

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
    assert proc.returncode != 0
    assert "KGRAG_DATA_DIR" in proc.stderr + proc.stdout


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

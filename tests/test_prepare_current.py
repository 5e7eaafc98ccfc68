"""A prepared dataset whose inputs did not change is current (``kgrag prepare`` then starts no flow); any change of
its inputs, a missing output or a summary left from an earlier run makes it not current."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

from kgrag.data.spec import DatasetSpec
from kgrag.prep.current import current_summary
from kgrag.prep.manifest import record_step
from kgrag.prep.steps import input_fingerprint, spec_of


def test_current_until_an_output_or_the_summary_disagrees(demo_untrained_settings, tmp_path):
    settings = demo_untrained_settings.model_copy(update={"work_dir": tmp_path / "work"})
    shutil.copytree(demo_untrained_settings.dataset_dir("demo"), settings.dataset_dir("demo"))
    spec = spec_of("demo", settings)
    out = settings.dataset_dir("demo")
    markdown = current_summary(spec, settings.data_dir, settings)
    assert markdown == (out / "summary.md").read_text(encoding="utf-8") and "Data prep: demo" in markdown

    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    (out / "summary.json").write_text(json.dumps({**summary, "graph": {"triples": -1}}), encoding="utf-8")
    assert current_summary(spec, settings.data_dir, settings) is None  # a summary of another run
    (out / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    assert current_summary(spec, settings.data_dir, settings) is not None

    (out / "questions.jsonl").unlink()
    assert current_summary(spec, settings.data_dir, settings) is None  # an output is gone


def test_a_changed_input_file_is_not_current(tmp_path, demo_untrained_settings):
    settings = demo_untrained_settings.model_copy(update={"work_dir": tmp_path / "work"})
    triples = tmp_path / "kg.tsv"
    triples.write_text("a\tknows\tb\n", encoding="utf-8")
    spec = DatasetSpec(name="tiny", reader="triples", triples=[str(triples)])
    out = settings.dataset_dir("tiny")
    out.mkdir(parents=True)
    fingerprint = input_fingerprint(spec, settings.data_dir)
    for step in ("graph", "store", "questions"):
        record_step(out, step, fingerprint, [], {"step": step})
    (out / "summary.md").write_text("# Data prep: tiny\n", encoding="utf-8")
    (out / "summary.json").write_text(json.dumps({s: {"step": s} for s in ("graph", "store", "questions")}))
    assert current_summary(spec, settings.data_dir, settings) == "# Data prep: tiny\n"
    triples.write_text("a\tknows\tb\nb\tknows\tc\n", encoding="utf-8")
    assert current_summary(spec, settings.data_dir, settings) is None


def test_prepare_again_starts_no_flow(demo_untrained_settings, tmp_path):
    """`kgrag prepare --dataset demo` on a prepared, unchanged demo prints its summary without importing Prefect."""
    work = tmp_path / "work"
    shutil.copytree(demo_untrained_settings.dataset_dir("demo"), work / "demo")
    script = ("import sys\nfrom typer.testing import CliRunner\nfrom kgrag.cli import app\n"
              "result = CliRunner().invoke(app, ['prepare', '--dataset', 'demo'])\n"
              "print(result.exit_code, 'prefect' in sys.modules, 'torch' in sys.modules)\nprint(result.output)\n")
    env = {**os.environ, "KGRAG_WORK_DIR": str(work), "COLUMNS": "200"}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env,
                         check=True).stdout
    assert out.splitlines()[0] == "0 False False", out
    assert "inputs are unchanged: nothing to redo" in out and "questions of the prepared demo data" in out

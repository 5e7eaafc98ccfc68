"""A prepared dataset whose inputs did not change is current (``kgrag prepare`` then starts no flow); any change of
its inputs, a missing output or a summary left from an earlier run makes it not current."""

from __future__ import annotations

import json
import shutil

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

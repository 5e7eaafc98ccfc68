"""Whether a prepared dataset is current: the fingerprint of today's inputs is the one each prepare step recorded,
every step's outputs exist and the summary was written from those very steps — then ``kgrag prepare`` has nothing
to do and answers from the manifest without starting a flow (no Prefect, no pipeline imports: well under 2 s).

    current_summary(spec, data_dir, settings)  # the last prepare's summary markdown, or None (run the flow)
"""

from __future__ import annotations

from pathlib import Path

from kgrag.config import Settings
from kgrag.data.spec import DatasetSpec
from kgrag.prep.manifest import step_is_current, step_result
from kgrag.prep.steps import input_fingerprint
from kgrag.prep.summary import read_summary

__all__ = ["STEPS", "current_summary"]

#: the prepare steps whose recorded results the summary holds (flows/prepare_data.py runs them in this order)
STEPS = ("graph", "store", "questions")


def current_summary(spec: DatasetSpec, data_dir: Path, settings: Settings) -> str | None:
    """The markdown summary of ``spec``'s last prepare when nothing changed since (see the module docstring), else
    None. Raises what :func:`kgrag.prep.steps.input_fingerprint` raises for missing inputs."""
    out = settings.dataset_dir(spec.name)
    summary_md = out / "summary.md"
    if not summary_md.is_file():
        return None
    fingerprint = input_fingerprint(spec, data_dir)
    if not all(step_is_current(out, step, fingerprint) for step in STEPS):
        return None
    summary = read_summary(out)  # written after the steps: it must hold their results, not an earlier run's
    if any(summary.get(step) != step_result(out, step) for step in STEPS):
        return None
    return summary_md.read_text(encoding="utf-8")

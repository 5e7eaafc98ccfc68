"""Importing a user's graph atomically: prepare it in a staging folder, then swap it in and register its spec.

    staging = staging_dir(settings, spec, fingerprint)   # None: prepare in place (built-in, or nothing changed)
    ...the prep steps write into staging...
    commit(settings, spec, staging)                       # swap folders, then register

A re-run with the same inputs prepares in place, where every step is already current (a no-op). A failed import
removes its staging folder (:func:`discard`) and leaves the dataset's folder and registration as they were.
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

from kgrag.config import Settings
from kgrag.data.registry import register, registered_spec
from kgrag.data.spec import DatasetSpec
from kgrag.graph.versions.commit import update_lock
from kgrag.prep.manifest import MANIFEST, step_is_current

__all__ = ["PREP_STEPS", "commit", "discard", "staging_dir"]

PREP_STEPS = ("graph", "store", "questions")


def staging_dir(settings: Settings, spec: DatasetSpec, fingerprint: str) -> Path | None:
    """Where to prepare ``spec``: None (its own folder) for a built-in dataset or when the registered spec is the
    same and every step is current; else a fresh folder beside it."""
    final = settings.dataset_dir(spec.name)
    if spec.builtin:
        return None
    if registered_spec(spec.name, settings) == spec and all(step_is_current(final, s, fingerprint) for s in PREP_STEPS):
        return None
    root = settings.work_dir / ".staging"
    root.mkdir(parents=True, exist_ok=True)
    return root / f"{spec.name}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def commit(settings: Settings, spec: DatasetSpec, staging: Path) -> Path:
    """Swap the prepared ``staging`` folder in for the dataset's folder, then register the spec."""
    final = settings.dataset_dir(spec.name)
    for recorded in (staging / MANIFEST, staging / "summary.json"):  # paths recorded in the staging folder's
        if recorded.is_file():  # results now live in the final one (the summary must equal the manifest's results)
            recorded.write_text(recorded.read_text(encoding="utf-8").replace(str(staging), str(final)),
                                encoding="utf-8")
    old = None
    with update_lock(final):  # not while `kgrag kg update` builds a version inside the folder being replaced
        if final.exists():
            old = staging.with_name(f"{staging.name}.old")
            os.replace(final, old)
        os.replace(staging, final)
    register(spec, settings)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    return final


def discard(staging: Path | None) -> None:
    if staging is not None:
        shutil.rmtree(staging, ignore_errors=True)

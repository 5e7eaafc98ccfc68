"""``kgrag kg remove NAME``: remove an imported KG cleanly — its registration first (no command or route finds it
after that), then its folder (every version), staging leftovers and its trained checkpoints' pointers and runs.

    removed = remove_kg(settings, "mykg")   # the paths removed; KgragError for a built-in or an unknown name

A built-in dataset (:data:`kgrag.data.spec.BUILTIN_SPECS`) is refused. Serving processes that hold the KG open keep
answering from the files they hold (Linux keeps unlinked files alive) until they look it up again.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from kgrag.config import Settings
from kgrag.data.registry import dataset_names, registered_spec, unregister
from kgrag.data.spec import BUILTIN_SPECS
from kgrag.errors import KgragError

__all__ = ["remove_kg"]


def _checkpoints(settings: Settings, name: str) -> list[Path]:
    """The ``<kind>/<name>-latest.json`` pointers and the run folders they name (inside the checkpoint dir)."""
    root = settings.checkpoint_dir
    found: list[Path] = []
    for pointer in sorted(root.glob(f"*/{name}-latest.json")) if root.is_dir() else []:
        found.append(pointer)
        try:
            run_dir = Path(json.loads(pointer.read_text(encoding="utf-8"))["run_dir"]).resolve()
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if root.resolve() in run_dir.parents and run_dir.is_dir():
            found.append(run_dir)
    return found


def remove_kg(settings: Settings, name: str) -> list[Path]:
    """Remove imported KG ``name`` (see the module docstring); returns what was removed."""
    if name in BUILTIN_SPECS:
        raise KgragError(f"{name!r} is a built-in KG: it cannot be removed (its prepared files are rebuilt by "
                         f"`kgrag prepare --dataset {name}`)")
    if registered_spec(name, settings) is None:
        raise KgragError(f"unknown KG {name!r}: known KGs are {', '.join(dataset_names(settings))}")
    removed: list[Path] = []
    targets = [settings.dataset_dir(name), *sorted((settings.work_dir / ".staging").glob(f"{name}-*")),
               *_checkpoints(settings, name)]
    unregister(name, settings)
    removed.append(settings.work_dir / "datasets" / f"{name}.json")
    for path in targets:
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
        elif path.exists():
            path.unlink(missing_ok=True)
            removed.append(path)
    return removed

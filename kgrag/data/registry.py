"""The registered datasets: the built-in specs plus every graph a user imported (``kgrag prepare --dataset NAME
--triples …`` or ``--endpoint URL``), one JSON file each under ``<KGRAG_WORK_DIR>/datasets/``.

    dataset_spec("mykg", get_settings())   # the spec every later command reads by name

A name is resolved once, where it enters (a CLI command, an HTTP route, an MCP tool, a flow run by a deployment,
the agent's KG loader); below that the spec is passed, not the name (:func:`spec_of` for an entry that takes either).

A spec is written only after its import succeeded (:func:`register`, atomic), so a failed import leaves the
previous registration as it was. Names of the built-in datasets cannot be re-registered.
"""

from __future__ import annotations

import json
import os
import re
from functools import lru_cache
from pathlib import Path

from pydantic import ValidationError

from kgrag.config import Settings, get_settings
from kgrag.data.spec import BUILTIN_SPECS, NAME_PATTERN, DatasetSpec
from kgrag.errors import KgragError

__all__ = ["dataset_names", "dataset_spec", "unknown_dataset", "register", "registered_spec", "registered_specs", "registry_dir",
           "spec_of", "unregister"]


_NAME = re.compile(NAME_PATTERN)


def registry_dir(settings: Settings) -> Path:
    return settings.work_dir / "datasets"


def _path(settings: Settings, name: str) -> Path:
    return registry_dir(settings) / f"{name}.json"


@lru_cache(maxsize=256)
def _parse(path: Path, mtime_ns: int, size: int) -> DatasetSpec | None:  # noqa: ARG001 - the cache key
    try:
        return DatasetSpec.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValidationError, ValueError):
        return None  # an unreadable entry is not a dataset (kgrag kg list shows the ones that are)


def _read(path: Path) -> DatasetSpec | None:
    """The spec in ``path``, parsed once per version of the file (every KG route and command looks its KG up)."""
    try:
        st = path.stat()
    except OSError:
        return None
    return _parse(path, st.st_mtime_ns, st.st_size)


def registered_spec(name: str, settings: Settings) -> DatasetSpec | None:
    """The imported spec registered as ``name`` (None when there is none; the built-in specs are not here). A name
    no dataset can have (:data:`~kgrag.data.spec.NAME_PATTERN`: a path, a NUL byte…) is none, never a file lookup."""
    if not _NAME.fullmatch(name):
        return None
    return _read(_path(settings, name))


def registered_specs(settings: Settings) -> dict[str, DatasetSpec]:
    """Every dataset by name: built-in first, then the imported ones in name order."""
    specs = dict(BUILTIN_SPECS)
    folder = registry_dir(settings)
    if folder.is_dir():
        for path in sorted(folder.glob("*.json")):
            spec = _read(path)
            if spec is not None and spec.name == path.stem and spec.name not in BUILTIN_SPECS:
                specs[spec.name] = spec
    return specs


def dataset_names(settings: Settings) -> list[str]:
    return list(registered_specs(settings))


def dataset_spec(name: str, settings: Settings) -> DatasetSpec:
    """The spec of dataset ``name``; a clear error naming the known ones when there is none."""
    if name in BUILTIN_SPECS:
        return BUILTIN_SPECS[name]
    spec = registered_spec(name, settings)
    if spec is None:
        raise KgragError(unknown_dataset(name, dataset_names(settings)))
    return spec


def unknown_dataset(name: str, known: list[str]) -> str:
    """The message for a dataset that is not there (or that a caller's key may not read: ``known`` then lists
    only those it may)."""
    return (f"unknown dataset {name!r}: known datasets are {', '.join(known) or 'none'}. Import your own graph with "
            f"`kgrag prepare --dataset NAME --triples FILE` (or --endpoint URL).")


def spec_of(dataset: str | DatasetSpec, settings: Settings | None = None) -> DatasetSpec:
    """The spec of a dataset given as a spec (returned as it is: resolved already at the caller's edge) or by name
    (:func:`dataset_spec`) — for an entry point that takes either, like a flow a deployment runs by name."""
    if isinstance(dataset, DatasetSpec):
        return dataset
    return dataset_spec(dataset, settings or get_settings())


def register(spec: DatasetSpec, settings: Settings) -> Path:
    """Record ``spec`` (atomic write); refuses the built-in names."""
    if spec.name in BUILTIN_SPECS:
        raise KgragError(f"{spec.name!r} is a built-in dataset; import your graph under another name")
    path = _path(settings, spec.name)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_text(json.dumps(spec.model_dump(mode="json"), indent=2, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, path)
    return path


def unregister(name: str, settings: Settings) -> bool:
    path = _path(settings, name)
    if name in BUILTIN_SPECS or not path.is_file():
        return False
    path.unlink()
    return True

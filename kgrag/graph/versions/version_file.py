"""A prepared KG's version: one small file, ``<dataset dir>/version.json``, names the version and where its files are.

    token = version_token(settings.dataset_dir("mykg"))   # one stat: changes whenever a new version is committed
    info = read_version(settings.dataset_dir("mykg"))      # {"version", "updated_at", "graph", "store"} or {}

``kgrag prepare`` writes it after every import; ``kgrag kg update`` builds the new version in
``versions/<version>/`` (``graph.npz`` + ``oxigraph/``) and commits it by replacing this one file (``os.replace``:
atomic), so a reader that resolves the paths from one read of the file sees one version whole, never half. The
top-level ``graph.npz`` is kept equal to the current version's (a hard link, replaced atomically) for the readers
that map it by path. A dataset prepared before versions existed has no file: its version token is its graph's
stat and its files are the top-level ones.
"""

from __future__ import annotations

import json
import os
import uuid
from datetime import UTC, datetime
from pathlib import Path

__all__ = ["VERSION_FILE", "VERSIONS_DIR", "graph_file", "new_version", "read_version", "store_dir",
           "version_token", "write_version"]

VERSION_FILE = "version.json"
VERSIONS_DIR = "versions"


def new_version() -> str:
    """A fresh version name: UTC time to the microsecond + 6 hex (sorts by time, unique across processes)."""
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ") + "-" + uuid.uuid4().hex[:6]


def read_version(dataset_dir: Path) -> dict:
    """The committed version record, ``{}`` when the dataset has none (prepared before versions, or not at all)."""
    try:
        data = json.loads((Path(dataset_dir) / VERSION_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def write_version(dataset_dir: Path, version: str, graph: str = "graph.npz", store: str | None = "oxigraph",
                  **extra: object) -> dict:
    """Commit ``version`` (paths relative to ``dataset_dir``): one atomic replace of the version file."""
    dataset_dir = Path(dataset_dir)
    record = {"version": version, "updated_at": datetime.now(UTC).isoformat(timespec="seconds"),
              "graph": graph, "store": store, **extra}
    tmp = dataset_dir / f".{VERSION_FILE}.tmp{os.getpid()}"
    tmp.write_text(json.dumps(record, indent=2), encoding="utf-8")
    with open(tmp, "rb") as fh:
        os.fsync(fh.fileno())
    os.replace(tmp, dataset_dir / VERSION_FILE)
    return record


def version_token(dataset_dir: Path) -> tuple[int, int, int] | None:
    """What a serving process compares per request (one ``stat``): the version file's (inode, mtime, size), else
    the top-level graph's; None when neither exists."""
    base = os.fspath(dataset_dir)  # string joins: this runs per request, a Path join costs more than the stat
    for name in (VERSION_FILE, "graph.npz"):
        try:
            st = os.stat(os.path.join(base, name))
        except OSError:
            continue
        return st.st_ino, st.st_mtime_ns, st.st_size
    return None


def _resolved(dataset_dir: Path, relative: object, default: str) -> Path:
    if isinstance(relative, str) and relative and not os.path.isabs(relative) and ".." not in Path(relative).parts:
        path = Path(dataset_dir) / relative
        if path.exists():
            return path
    return Path(dataset_dir) / default


def graph_file(dataset_dir: Path, record: dict | None = None) -> Path:
    """The current version's ``graph.npz`` (``record``: a :func:`read_version` result already read)."""
    record = read_version(dataset_dir) if record is None else record
    return _resolved(dataset_dir, record.get("graph"), "graph.npz")


def store_dir(dataset_dir: Path, record: dict | None = None) -> Path:
    """The current version's Oxigraph store directory."""
    record = read_version(dataset_dir) if record is None else record
    return _resolved(dataset_dir, record.get("store"), "oxigraph")

"""Input fingerprints and a per-dataset manifest so every data-prep step is idempotent.

A step records the fingerprint of its inputs and the files it produced; re-running it with the same inputs
while those files still exist is a no-op.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from pathlib import Path

MANIFEST = "manifest.json"


def fingerprint_paths(paths: list[Path], extra: str = "") -> str:
    """SHA-256 over (relative name, size, mtime) of every file under ``paths`` plus ``extra``."""
    h = hashlib.sha256(extra.encode("utf-8"))
    for root in sorted(Path(p) for p in paths):
        files = sorted(f for f in root.rglob("*") if f.is_file()) if root.is_dir() else [root]
        for f in files:
            st = f.stat()
            h.update(f"{f.name}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def _read(dataset_dir: Path) -> dict:
    path = dataset_dir / MANIFEST
    return json.loads(path.read_text()) if path.exists() else {}


def step_is_current(dataset_dir: Path, step: str, fingerprint: str) -> bool:
    """True when ``step`` last ran on the same inputs and every output it recorded still exists."""
    entry = _read(dataset_dir).get(step)
    if not entry or entry.get("fingerprint") != fingerprint:
        return False
    return all((dataset_dir / out).exists() for out in entry.get("outputs", []))


def step_result(dataset_dir: Path, step: str) -> dict:
    return _read(dataset_dir).get(step, {}).get("result", {})


def record_step(dataset_dir: Path, step: str, fingerprint: str, outputs: list[str], result: dict) -> None:
    """Record a finished step (atomic write of the manifest)."""
    dataset_dir.mkdir(parents=True, exist_ok=True)
    data = _read(dataset_dir)
    data[step] = {"fingerprint": fingerprint, "outputs": outputs, "result": result}
    tmp = dataset_dir / f"{MANIFEST}.tmp{os.getpid()}"
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True))
    os.replace(tmp, dataset_dir / MANIFEST)


def state_token(dataset_dir: Path, step: str) -> str:
    """A short token of a step's recorded state, for Prefect cache keys: when the step's outputs are missing it
    is unique (``absent-<uuid>``), so a cache can never claim outputs that are not on disk."""
    entry = _read(dataset_dir).get(step)
    if not entry or not all((dataset_dir / out).exists() for out in entry.get("outputs", [])):
        return f"absent-{uuid.uuid4().hex}"
    return hashlib.sha256(json.dumps(entry, sort_keys=True).encode()).hexdigest()[:16]

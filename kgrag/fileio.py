"""Atomic file writes: write a temporary file beside the target, then ``os.replace`` it in, so a reader sees the
old file or the new one, never half of one.

    atomic_write(path, lambda tmp: tmp.write_bytes(data)); write_json(path, {"a": 1})
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["atomic_write", "write_json"]


def atomic_write(path: Path, write: Callable[[Path], object]) -> None:
    """``write(tmp)`` then move ``tmp`` onto ``path`` (the folder is made; the temporary file is removed when
    ``write`` fails)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_json(path: Path, obj: Any, **dumps: Any) -> None:
    """``obj`` as UTF-8 JSON (non-ASCII kept), atomically; ``dumps`` go to :func:`json.dumps`."""
    text = json.dumps(obj, ensure_ascii=False, **dumps)
    atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def png_data_url(path: Path) -> str:
    """``data:image/png;base64,…`` of a PNG file (what a Prefect image or markdown artifact can show inline)."""
    return "data:image/png;base64," + base64.b64encode(Path(path).read_bytes()).decode()

"""Work done in parts, each kept on disk as it finishes, so a stage killed midway (SIGKILL, a lost machine)
continues from its last completed part on the next run and never redoes one.

    parts = Parts(folder / "samples_train_<key>.parts", count=8, save=save, load=load)
    results = [parts.get(k, lambda: build(k)) for k in range(8)]     # a finished part is read, not rebuilt
    parts.clear()                                                    # after the merged result is saved

A part is written to a temp file beside it and moved into place (a kill leaves no half part); the folder's name
carries the content key of the whole job, so parts of another job (other questions, settings or graph) are never
mixed in. Each part read back is said on stderr (``resumed: <label>: part 3 of 8 read back …``) and counted in
``resumed``.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Generic, TypeVar

__all__ = ["Parts"]

T = TypeVar("T")


class Parts(Generic[T]):
    """``count`` parts of one job under ``folder`` (``<k>of<count><suffix>``), saved with ``save(value, path)``
    and read with ``load(path)``."""

    def __init__(self, folder: Path, count: int, save: Callable[[T, Path], object], load: Callable[[Path], T],
                 suffix: str = ".npz", label: str = "") -> None:
        self.folder, self.count, self.suffix = Path(folder), int(count), suffix
        self.label = label or self.folder.name
        self._save, self._load = save, load
        self.resumed = 0
        self.built = 0

    def path(self, k: int) -> Path:
        return self.folder / f"{k + 1}of{self.count}{self.suffix}"

    def done(self, k: int) -> bool:
        return self.path(k).is_file()

    def get(self, k: int, build: Callable[[], T]) -> T:
        """Part ``k``: read back when a run before finished it, else built and saved."""
        path = self.path(k)
        if path.is_file():
            try:
                value = self._load(path)
            except (OSError, ValueError, EOFError, KeyError):  # an unreadable part (disk trouble): built again
                path.unlink(missing_ok=True)
            else:
                self.resumed += 1
                sys.stderr.write(f"resumed: {self.label}: part {k + 1} of {self.count} read back (finished by an "
                                 "interrupted run)\n")
                return value
        value = build()
        self.folder.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.stem}.tmp{os.getpid()}{self.suffix}")
        try:
            self._save(value, tmp)
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
        self.built += 1
        return value

    def clear(self) -> None:
        """Drop the parts (the job's merged result is saved)."""
        shutil.rmtree(self.folder, ignore_errors=True)

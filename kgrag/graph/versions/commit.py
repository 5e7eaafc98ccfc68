"""Building and committing a KG's next version on disk: the update lock, the store checkpoint that takes a change,
the commit (one ``os.replace`` of ``version.json``) and the clean-up after it.

    with update_lock(dataset_dir):
        apply_store_changes(store_dir(dataset_dir), building / "oxigraph", changes, iri_base, count)
        commit_version(dataset_dir, version, building, has_store=True)

A version is built in ``versions/<version>.building/`` and renamed to ``versions/<version>/`` before the commit, so
a SIGKILL at any point before :func:`commit_version` writes the version file leaves the previous version whole;
after it, the new one is. The top-level ``graph.npz`` is relinked to the committed one (a hard link swapped in
atomically; :func:`repair_top_level` redoes it after a kill between the two). The previous version is kept
(readers may still hold it open), older ones are removed. ``kgrag kg update`` (:mod:`kgrag.prep.update`) and a
re-``prepare``'s delta path (:mod:`kgrag.prep.steps`) build versions this way.

The crash tests stop a build at a named point: ``KGRAG_UPDATE_PAUSE=point:seconds`` makes :func:`pause` sleep there
(after writing the point's name to the file ``KGRAG_UPDATE_PAUSE_MARK`` names).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kgrag.errors import KgragError
from kgrag.graph.iri import VALUE_PREDICATE
from kgrag.graph.oxigraph_store import backup_store, update_store
from kgrag.graph.versions.delta import TripleStoreChanges, store_update_text, value_count_query
from kgrag.graph.versions.version_file import VERSIONS_DIR, graph_file, read_version, write_version

__all__ = ["apply_store_changes", "commit_version", "pause", "repair_top_level", "update_lock"]

#: the crash tests' hook (see the module docstring)
_PAUSE = "KGRAG_UPDATE_PAUSE"


def pause(point: str) -> None:
    """Sleep at ``point`` when ``KGRAG_UPDATE_PAUSE`` names it (crash tests kill the process there)."""
    wanted = os.environ.get(_PAUSE, "")
    if wanted.partition(":")[0] == point:
        mark = os.environ.get(f"{_PAUSE}_MARK")
        if mark:
            Path(mark).write_text(point, encoding="utf-8")
        time.sleep(float(wanted.partition(":")[2] or 5))


@contextmanager
def update_lock(dataset_dir: Path) -> Iterator[None]:
    """The KG's update lock (``flock`` on ``<dataset dir>/.update.lock``): one update at a time, and a re-import's
    folder swap never in the middle of one. A folder that does not exist yet needs no lock."""
    path = dataset_dir / ".update.lock"
    for _ in range(100):
        if not dataset_dir.is_dir():
            yield
            return
        with open(path, "a") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                if os.path.exists(path) and os.fstat(fh.fileno()).st_ino == os.stat(path).st_ino:
                    yield  # the lock of the folder that is there now (a re-import may have swapped it meanwhile)
                    return
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)
    raise KgragError(f"{dataset_dir}: could not take the update lock (the folder keeps being replaced)")


def _relink(target: Path, link: Path) -> None:
    """Make ``link`` the same file as ``target`` (a hard link, swapped in atomically)."""
    tmp = link.with_name(f".{link.name}.link{os.getpid()}")
    tmp.unlink(missing_ok=True)
    try:
        os.link(target, tmp)
    except OSError:  # no hard links on this file system: a copy
        shutil.copy2(target, tmp)
    os.replace(tmp, link)


def repair_top_level(dataset_dir: Path, record: dict) -> None:
    """After a SIGKILL between a commit and its relink, the top-level ``graph.npz`` is the previous version's:
    make it the committed one's again."""
    current = graph_file(dataset_dir, record)
    top = dataset_dir / "graph.npz"
    if current != top and current.is_file() and (not top.is_file() or not os.path.samefile(current, top)):
        _relink(current, top)


def _prune(dataset_dir: Path, keep: set[str]) -> None:
    """Remove version folders other than ``keep`` (relative paths), stale ``.building`` ones and, once the
    previous version lives under ``versions/``, the top-level store of the first import."""
    root = dataset_dir / VERSIONS_DIR
    if root.is_dir():
        for child in root.iterdir():
            if f"{VERSIONS_DIR}/{child.name}" not in keep:
                shutil.rmtree(child, ignore_errors=True)
    if all(k.startswith(f"{VERSIONS_DIR}/") for k in keep):
        shutil.rmtree(dataset_dir / "oxigraph", ignore_errors=True)


def commit_version(dataset_dir: Path, version: str, building: Path, has_store: bool) -> dict:
    """Rename the finished ``building`` folder to ``versions/<version>``, commit it, relink the top-level graph
    and remove the versions no reader needs any more (the previous one is kept)."""
    previous = read_version(dataset_dir)
    final = dataset_dir / VERSIONS_DIR / version
    os.replace(building, final)
    pause("before-commit")
    relative = f"{VERSIONS_DIR}/{version}"
    record = write_version(dataset_dir, version, graph=f"{relative}/graph.npz",
                           store=f"{relative}/oxigraph" if has_store else None)
    pause("after-commit")
    _relink(final / "graph.npz", dataset_dir / "graph.npz")
    before = str(previous.get("store") or previous.get("graph") or "oxigraph").split("/")
    keep = {relative, "/".join(before[:2]) if before[0] == VERSIONS_DIR else before[0]}
    _prune(dataset_dir, keep)
    return record


def apply_store_changes(source: Path, target: Path, changes: TripleStoreChanges, iri_base: str, count: int | None) -> int:
    """Checkpoint the store at ``source`` (``count`` triples, None: unknown) into ``target`` (hard links) and apply
    the changes there in one update; the new triple count."""
    backup_store(source, target)
    pause("after-backup")
    value_p = iri_base + VALUE_PREDICATE
    expected = None if count is None else count + len(changes.insert) - len(changes.delete)
    return update_store(target, store_update_text(changes, value_p), value_count_query(changes, value_p), expected)

"""``kgrag kg update``: apply triples to add and to delete to a prepared KG as a new version, atomically.

    stats = update_kg(settings, "mykg", add=[Path("new.nt")], delete=[Path("gone.nt")])   # UpdateStats

The files are read as ``kgrag prepare`` reads them, strictly: a malformed line, a missing file or an unknown format
rejects the whole update (``file:line: reason``) before anything is written. The graph takes the delta
(:func:`kgrag.graph.delta.graph_delta`); the new version is built in ``versions/<version>.building/`` — the store a
hard-link checkpoint of the current one (``Store.backup``) with the delta applied in one SPARQL UPDATE, the new
``graph.npz`` beside it — renamed to ``versions/<version>/`` and committed by replacing ``version.json`` (one
``os.replace``). A SIGKILL at any point before that leaves the previous version whole (a stale ``.building`` folder
is removed by the next update); after it, the new one is. Serving processes see the version file change on their
next request (:mod:`kgrag.graph.kg_version`). The previous version is kept (readers may still hold it open), older
ones are removed. Updates of one KG are serialised by a lock file.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from kgrag.config import Settings
from kgrag.data.registry import dataset_spec
from kgrag.data.spec import DatasetSpec
from kgrag.data.triples import TripleArrays, detect_format, read_triple_files
from kgrag.errors import KgragError
from kgrag.graph.csr import CSRGraph
from kgrag.graph.delta import TripleStoreChanges, graph_delta, store_update_text, value_count_query
from kgrag.graph.iri import VALUE_PREDICATE
from kgrag.graph.kg_version import (
    VERSIONS_DIR,
    graph_file,
    new_version,
    read_version,
    store_dir,
    write_version,
)
from kgrag.graph.oxigraph_store import backup_store, update_store
from kgrag.prep.manifest import MANIFEST, record_step, step_result
from kgrag.prep.summary import read_summary, write_summary

__all__ = ["UpdateStats", "apply_store_changes", "commit_version", "endpoint_note", "read_delta_files", "update_kg",
           "update_lock"]

#: a hook the crash tests use to stop an update at a named point (``KGRAG_UPDATE_PAUSE=point:seconds``; the point's
#: name is written to the file ``KGRAG_UPDATE_PAUSE_MARK`` names when it is reached)
_PAUSE = "KGRAG_UPDATE_PAUSE"


@dataclass
class UpdateStats:
    """What one update did (the table ``kgrag kg update`` prints, ``--json`` its dict)."""

    dataset: str
    version: str
    changed: bool
    triples_added: int
    triples_deleted: int
    not_found: int
    already_present: int
    names_changed: int
    entities_new: int
    entities_gone: int
    relations_new: int
    triples: int
    seconds: float

    def as_dict(self) -> dict:
        return asdict(self)


def endpoint_note(spec: DatasetSpec) -> str:
    """What to say for a KG that lives on its endpoint only."""
    return (f"{spec.name!r} lives on {spec.describe()}: nothing to update here — update your endpoint's data "
            "(kgrag queries it live)")


def _pause(point: str) -> None:
    """Sleep at ``point`` when ``KGRAG_UPDATE_PAUSE`` names it (crash tests kill the process there)."""
    wanted = os.environ.get(_PAUSE, "")
    if wanted.partition(":")[0] == point:
        mark = os.environ.get(f"{_PAUSE}_MARK")
        if mark:
            Path(mark).write_text(point, encoding="utf-8")
        time.sleep(float(wanted.partition(":")[2] or 5))


def read_delta_files(paths: Sequence[Path], spec: DatasetSpec, lang: str) -> TripleArrays | None:
    """The triples of ``paths`` (None for none); a missing file, an unknown format or a malformed line is a
    :class:`KgragError` ``file:line: reason`` — the whole update is rejected."""
    if not paths:
        return None
    for path in paths:
        if not Path(path).is_file():
            raise KgragError(f"{path}: file not found; update rejected, nothing applied")
        detect_format(Path(path))
    arrays = read_triple_files([Path(p) for p in paths], lang=lang, max_bad_lines=10**9,
                               alias_predicates=spec.alias_predicates)
    if arrays.bad_lines:
        more = f" (and {arrays.bad_lines - 1} more malformed lines)" if arrays.bad_lines > 1 else ""
        raise KgragError(f"{arrays.issues[0]}{more}; update rejected, nothing applied")
    return arrays


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


def _repair_top_level(dataset_dir: Path, record: dict) -> None:
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
    _pause("before-commit")
    relative = f"{VERSIONS_DIR}/{version}"
    record = write_version(dataset_dir, version, graph=f"{relative}/graph.npz",
                           store=f"{relative}/oxigraph" if has_store else None)
    _pause("after-commit")
    _relink(final / "graph.npz", dataset_dir / "graph.npz")
    before = str(previous.get("store") or previous.get("graph") or "oxigraph").split("/")
    keep = {relative, "/".join(before[:2]) if before[0] == VERSIONS_DIR else before[0]}
    _prune(dataset_dir, keep)
    return record


def apply_store_changes(source: Path, target: Path, changes: TripleStoreChanges, iri_base: str, count: int | None) -> int:
    """Checkpoint the store at ``source`` (``count`` triples, None: unknown) into ``target`` (hard links) and apply
    the changes there in one update; the new triple count."""
    backup_store(source, target)
    _pause("after-backup")
    value_p = iri_base + VALUE_PREDICATE
    expected = None if count is None else count + len(changes.insert) - len(changes.delete)
    return update_store(target, store_update_text(changes, value_p), value_count_query(changes, value_p), expected)


def _record(dataset_dir: Path, name: str, graph: CSRGraph, store_triples: int | None, version: str) -> None:
    """The summary's counts follow the new version; the manifest's graph and store steps say they were updated
    (a later ``kgrag prepare`` then rebuilds from the files, through the delta path when it pays)."""
    summary = read_summary(dataset_dir)
    names = graph.entity_names
    lengths = names.lengths() if hasattr(names, "lengths") else [len(n) for n in names]
    degree = np.bincount(graph.head, minlength=graph.num_entities) + np.bincount(graph.tail,
                                                                                 minlength=graph.num_entities)
    named = np.asarray(lengths) > 0
    counts = {"entities": int(((degree > 0) | named).sum()), "named_entities": int(named.sum()),
              "relations": int(np.unique(graph.rel).size), "triples": graph.num_triples}
    if (dataset_dir / MANIFEST).is_file():
        for step in ("graph", "store"):
            result = step_result(dataset_dir, step)
            if step == "graph":
                result = {**result, **counts}
            elif store_triples is not None:
                result = {**result, "store_triples": store_triples}
            record_step(dataset_dir, step, f"updated:{version}", [], result)
    if {"graph", "store", "questions"} <= summary.keys():
        graph_counts = {**summary["graph"], **counts}
        store_counts = {**summary["store"], **({"store_triples": store_triples} if store_triples is not None else {})}
        write_summary(dataset_dir, name, graph_counts, store_counts, summary["questions"])


def update_kg(settings: Settings, name: str, add: Sequence[Path] = (), delete: Sequence[Path] = (),
              progress: Callable[[str], None] | None = None) -> UpdateStats:
    """Apply ``add`` / ``delete`` to KG ``name`` as a new version (module docstring); nothing changed: no version."""
    started = time.perf_counter()
    say = progress or (lambda _msg: None)
    spec = dataset_spec(name, settings)
    if not spec.local:
        raise KgragError(endpoint_note(spec))
    if not add and not delete:
        raise KgragError("nothing to update: give --add FILE and/or --delete FILE")
    dataset_dir = settings.dataset_dir(name)
    record = read_version(dataset_dir)
    if not graph_file(dataset_dir, record).is_file():
        raise KgragError(f"KG {name!r} is not prepared: run `kgrag prepare --dataset {name}` first")
    old = CSRGraph.load(graph_file(dataset_dir, record))
    lang = str(old.meta.get("name_lang") or spec.lang)
    added = read_delta_files(add, spec, lang)
    deleted = read_delta_files(delete, spec, lang)
    say("files read")
    with update_lock(dataset_dir):
        now = read_version(dataset_dir)
        if now != record:  # another update committed while we read the files: its graph is the base
            record = now
            old = CSRGraph.load(graph_file(dataset_dir, record))
        _repair_top_level(dataset_dir, record)
        delta = graph_delta(old, added, deleted, lang)
        stats = dict(triples_added=delta.added, triples_deleted=delta.deleted, not_found=delta.not_found,
                     already_present=delta.already_present, names_changed=delta.names_changed,
                     entities_new=delta.entities_new, entities_gone=delta.entities_gone,
                     relations_new=delta.relations_new, triples=delta.graph.num_triples)
        if not delta.changed:
            version = str(record.get("version") or "")
            return UpdateStats(name, version, False, seconds=round(time.perf_counter() - started, 3), **stats)
        say("delta computed")
        version = new_version()
        root = dataset_dir / VERSIONS_DIR
        root.mkdir(exist_ok=True)
        for stale in root.glob("*.building"):
            shutil.rmtree(stale, ignore_errors=True)
        building = root / f"{version}.building"
        building.mkdir()
        source_store = store_dir(dataset_dir, record)
        has_store = spec.store and source_store.is_dir()
        store_triples = None
        if has_store:
            known = step_result(dataset_dir, "store").get("store_triples")
            store_triples = apply_store_changes(source_store, building / "oxigraph", delta.store, old.iri_base,
                                         int(known) if isinstance(known, int) else None)
            say("store updated")
        _pause("after-store")
        delta.graph.save(building / "graph.npz")
        say("graph written")
        _pause("after-graph")
        commit_version(dataset_dir, version, building, has_store)
        _record(dataset_dir, name, delta.graph, store_triples, version)
    return UpdateStats(name, version, True, seconds=round(time.perf_counter() - started, 3), **stats)

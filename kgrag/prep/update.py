"""``kgrag kg update``: apply triples to add and to delete to a prepared KG as a new version, atomically.

    stats = update_kg(settings, "mykg", add=[Path("new.nt")], delete=[Path("gone.nt")])   # UpdateStats

The files are read as ``kgrag prepare`` reads them, strictly: a malformed line, a missing file or an unknown format
rejects the whole update (``file:line: reason``) before anything is written. The graph takes the delta
(:func:`kgrag.graph.versions.delta.graph_delta`); the new version is built in ``versions/<version>.building/`` —
the store a hard-link checkpoint of the current one (``Store.backup``) with the delta applied in one SPARQL UPDATE, the new
``graph.npz`` beside it — renamed to ``versions/<version>/`` and committed by replacing ``version.json`` (one
``os.replace``). A SIGKILL at any point before that leaves the previous version whole (a stale ``.building`` folder
is removed by the next update); after it, the new one is. Serving processes see the version file change on their
next request (:mod:`kgrag.graph.versions.version_file`). The previous version is kept (readers may still hold it
open), older ones are removed. Updates of one KG are serialised by a lock file. The on-disk steps (the lock, the
store checkpoint, the commit) are :mod:`kgrag.graph.versions.commit`'s; this module reads the files, computes the
delta and records the new counts in the dataset's manifest and summary.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from kgrag.config import Settings
from kgrag.data.registry import dataset_spec
from kgrag.data.spec import DatasetSpec
from kgrag.data.triples import TripleArrays, detect_format, read_triple_files
from kgrag.errors import KgragError
from kgrag.graph.csr import CSRGraph
from kgrag.graph.versions.commit import (
    apply_store_changes,
    commit_version,
    pause,
    repair_top_level,
    update_lock,
)
from kgrag.graph.versions.delta import graph_delta
from kgrag.graph.versions.version_file import VERSIONS_DIR, graph_file, new_version, read_version, store_dir
from kgrag.prep.manifest import MANIFEST, record_step, step_result
from kgrag.prep.summary import read_summary, write_summary

__all__ = ["UpdateStats", "endpoint_note", "read_delta_files", "update_kg"]


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
    current = graph_file(dataset_dir, record)
    if not current.is_file():
        raise KgragError(f"KG {name!r} is not prepared: run `kgrag prepare --dataset {name}` first")
    old = CSRGraph.load(current)
    lang = str(old.meta.get("name_lang") or spec.lang)
    added = read_delta_files(add, spec, lang)
    deleted = read_delta_files(delete, spec, lang)
    say("files read")
    with update_lock(dataset_dir):
        now = read_version(dataset_dir)
        if now != record:  # another update committed while we read the files: its graph is the base
            record = now
            old = CSRGraph.load(graph_file(dataset_dir, record))
        repair_top_level(dataset_dir, record)
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
        pause("after-store")
        delta.graph.save(building / "graph.npz")
        say("graph written")
        pause("after-graph")
        commit_version(dataset_dir, version, building, has_store)
        _record(dataset_dir, name, delta.graph, store_triples, version)
    return UpdateStats(name, version, True, seconds=round(time.perf_counter() - started, 3), **stats)

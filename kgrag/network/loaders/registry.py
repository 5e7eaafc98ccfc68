"""Named networks: ``load_named(name, store, data_dir, kn_id=None)`` builds and loads ``medical|metaqa|demo|synthetic``
(kn_id = the name) or a declarative schema file (``clinic.yaml``: kn_id from the file, else its stem); ``kn_id``
overrides either (:func:`check_kn_id` says what an id may hold). ``build_named`` only builds
``(network, instances, links)``; ``sync_named`` applies only the difference to a stored network
(:meth:`kgrag.network.store.NetworkStore.sync`; absent: a full load). Both record where the network came from in
its stats (``stats["source"]``: :func:`network_source`), from which the daily refresh re-syncs it.

    load_named("demo", NetworkStore("sqlite:///work/kn.db"))   # -> LoadStats(kn_id="demo", …)
    load_named("examples/library/library.yaml", store, kn_id="books")   # -> LoadStats(kn_id="books", …)
    sync_named("examples/library/library.yaml", store)   # -> ChangeStats(instances_inserted=…, …)
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path
from typing import Any

from kgrag.config import get_settings
from kgrag.data.gc_pause import gc_paused
from kgrag.errors import KgragError, NetworkNotFound
from kgrag.network.loaders import NetworkData, check_kn_id
from kgrag.network.loaders.declarative import (
    FilesDigest,
    changed_types,
    files_fingerprint,
    load_declarative,
    read_file_entries,
    read_schema,
)
from kgrag.network.loaders.demo import demo_network
from kgrag.network.loaders.medical import load_medical
from kgrag.network.loaders.metaqa import load_metaqa
from kgrag.network.loaders.synthetic import synthetic_network
from kgrag.network.store import ChangeStats, LoadStats, NetworkStore, Progress, ScopeOutdated, SyncScope
from kgrag.network.text.embedding import network_embedder
from kgrag.rank.tokenize import tokenize_cache

__all__ = ["NAMED_NETWORKS", "SCHEMA_SUFFIXES", "build_named", "check_kn_id", "ensure_network", "load_named",
           "network_loaded", "network_source", "sync_named"]

NAMED_NETWORKS = ("medical", "metaqa", "demo", "synthetic")
#: a schema file of the declarative loader (kgrag.network.loaders.declarative): kn_id from the file or its stem
SCHEMA_SUFFIXES = (".yaml", ".yml", ".json")


def build_named(name: str, data_dir: str | Path | None = None, kn_id: str | None = None,
                lazy: bool = False) -> NetworkData:
    """The network data for ``name`` (reads ``data_dir``, default ``Settings.data_dir``, for medical/metaqa), as
    network ``kn_id`` when given (else the name, or a schema file's own kn_id / stem). ``lazy``: a schema file's
    data files are checked now and read again when iterated (:func:`load_declarative`)."""
    if kn_id is not None:
        check_kn_id(kn_id)
    if data_dir is None:
        data_dir = get_settings().data_dir
    if name == "medical":
        return load_medical(data_dir, kn_id=kn_id or name)
    if name == "metaqa":
        return load_metaqa(data_dir, kn_id=kn_id or name)
    if name == "demo":
        return demo_network(kn_id=kn_id or name)
    if name == "synthetic":
        return synthetic_network(kn_id=kn_id or name)
    if Path(name).suffix.lower() in SCHEMA_SUFFIXES:
        data = load_declarative(name, kn_id=kn_id, lazy=lazy)
        check_kn_id(data[0].kn_id, f"{name}: kn_id")
        return data
    raise KgragError(f"unknown network {name!r}; choose one of {', '.join(NAMED_NETWORKS)} or give a schema file "
                     f"({', '.join(SCHEMA_SUFFIXES)})")


def network_source(name: str, data_dir: str | Path | None = None) -> dict[str, Any]:
    """Where network ``name`` comes from, as its stats record it: ``{"kind": "builtin", "name": …}`` (plus the
    ``data_dir`` when one was given) or ``{"kind": "file", "path": <absolute schema file>}``."""
    if name in NAMED_NETWORKS:
        source: dict[str, Any] = {"kind": "builtin", "name": name}
        if data_dir is not None:
            source["data_dir"] = str(Path(data_dir).resolve())
        return source
    return {"kind": "file", "path": str(Path(name).resolve())}


def load_named(name: str, store: NetworkStore, data_dir: str | Path | None = None,
               log: Callable[[str], None] | None = None, kn_id: str | None = None) -> LoadStats:
    """Build network ``name`` and load it into ``store`` (idempotent: replaces any earlier load), with Chinese
    vectors for a Chinese network (:func:`kgrag.network.text.embedding.network_embedder`). Each text is segmented
    once for the vectors' training, the text index and the vectors (:func:`kgrag.rank.tokenize.tokenize_cache`)."""
    network, instances, links = build_named(name, data_dir, kn_id, lazy=True)  # files read again, not held
    with tokenize_cache():
        embedder = network_embedder(network, instances, get_settings(), log=log)
        return store.load(network, instances, links, embedder=embedder, source=network_source(name, data_dir))


def network_loaded(store: NetworkStore, kn_id: str) -> bool:
    """``kn_id`` is in ``store`` with its text chunks (a store loaded before chunks existed is reloaded once)."""
    return kn_id in {k for k, _ in store.list_networks()} and "chunks" in store.network_stats(kn_id)


def ensure_network(store: NetworkStore, kn_id: str, data_dir: str | Path | None = None) -> bool:
    """Load the named network ``kn_id`` into ``store`` unless it is there already; True when it was loaded now."""
    if network_loaded(store, kn_id):
        return False
    load_named(kn_id, store, data_dir)
    return True


def files_fingerprint_of(name: str, kn_id: str | None = None) -> FilesDigest | None:
    """A schema file's :class:`FilesDigest` (:func:`files_fingerprint`), its fingerprint followed by the embedder
    settings that make its vectors; None for a built-in network or one with table entries."""
    if Path(name).suffix.lower() not in SCHEMA_SUFFIXES:
        return None
    found = files_fingerprint(name, kn_id)
    if found is None:
        return None
    settings = get_settings()
    return replace(found, fingerprint=f"{found.fingerprint}:{settings.embedder}:{settings.zh_embedder}")


def _stored(store: NetworkStore, kn_id: str) -> bool:
    try:
        store.network_version(kn_id)
    except NetworkNotFound:
        return False
    return True


def _unchanged(store: NetworkStore, kn_id: str, source: dict[str, Any]) -> ChangeStats | None:
    """The stats of a sync with nothing to do, when the stored network was last synced from exactly these files
    (its recorded source, fingerprint included: a change over HTTP drops the fingerprint) — else None."""
    try:
        stats = store.network_stats(kn_id)
    except NetworkNotFound:
        return None
    if stats.get("source") != source:
        return None
    return ChangeStats(kn_id=kn_id, version=stats["version"], instances_unchanged=int(stats.get("instances", 0)),
                       note="its files are unchanged since it was last loaded (same fingerprint): nothing read")


def sync_named(name: str, store: NetworkStore, data_dir: str | Path | None = None,
               log: Callable[[str], None] | None = None, kn_id: str | None = None, full: bool = False,
               progress: Progress | None = None, defer_vectors: bool = False, fill: bool = True) -> ChangeStats:
    """Build network ``name`` and apply only its difference to the stored network (absent, or ``full``: a full
    load, as :func:`load_named`, whose stages ``progress`` hears — its instance vectors deferred with
    ``defer_vectors``); then, when the network's instance vectors are pending (deferred now or by an earlier,
    interrupted load) and ``fill``, make them (:meth:`NetworkStore.fill_vectors`), saying through ``log`` when
    the network answers from its text index and conditions and when its vectors are made."""
    start = time.perf_counter()
    stats = _sync_named(name, store, data_dir, log, kn_id, full, progress, defer_vectors)
    pending = store.vectors_pending(stats.kn_id) if fill else None
    if pending is not None:
        say = log or (lambda _line: None)
        say(f"{stats.kn_id} answers from its text index and conditions now ({time.perf_counter() - start:.1f} s); "
            f"its vectors follow ({pending.get('done', 0):,} of {pending.get('total', 0):,} instances done)")
        filled = store.fill_vectors(stats.kn_id, progress)
        say(f"vectors of {stats.kn_id}: {filled.vectors:,} made for {filled.instances:,} instances in "
            f"{filled.seconds:.1f} s")
        stats.version, stats.vectors_filled = filled.version, filled.vectors
    stats.seconds = time.perf_counter() - start
    return stats


def _sync_changed_files(store: NetworkStore, name: str, digest: FilesDigest, source: dict[str, Any],
                        start: float) -> ChangeStats | None:
    """Sync a stored network from only the files that changed since it was made from its files (its recorded
    source still carries their hashes: nothing else changed it since) — the object types with a changed file, and
    the links when a link file changed (:func:`changed_types`); None when that cannot be done (the schema file or
    the embedder settings changed, no hashes recorded): the caller diffs the whole state."""
    try:
        before = store.network_stats(digest.kn_id).get("source") or {}
    except NetworkNotFound:
        return None
    settings = digest.fingerprint.split(":", 1)[1]
    if str(before.get("fingerprint", "")).split(":", 1)[-1] != settings:
        return None
    path = Path(name)
    network, data = read_schema(path, digest.kn_id)
    found = changed_types(network, data, before.get("files"), digest.parts)
    if found is None:
        return None
    types, relations = found
    with gc_paused():  # a million rows' objects, held: the cyclic GC would rescan them again and again
        instances, links = read_file_entries(path, network, data, types=types, links=bool(relations),
                                             stored_ids=lambda type_id: store.stored_ids(network.kn_id, type_id))
    scope = SyncScope(frozenset(types), frozenset(relations), str(before.get("fingerprint")))
    try:
        with tokenize_cache():  # the embedder the network was made with (the settings are the same)
            stats = store.sync(network, instances, links, source=source, scope=scope)
    except ScopeOutdated:  # changed meanwhile (over HTTP): its files no longer say what is stored
        return None
    read = ", ".join(sorted(types)) or "no instance file"
    stats.note = "; ".join(filter(None, [stats.note, f"files changed: read {read}"
                                         f"{' and the links' if relations else ''}, the rest as stored"]))
    stats.seconds = time.perf_counter() - start
    return stats


def _sync_named(name: str, store: NetworkStore, data_dir: str | Path | None, log: Callable[[str], None] | None,
                kn_id: str | None, full: bool, progress: Progress | None, defer_vectors: bool) -> ChangeStats:
    start = time.perf_counter()
    source = network_source(name, data_dir)
    fingerprinted = None if full else files_fingerprint_of(name, kn_id)
    if fingerprinted is not None:
        source.update(fingerprint=fingerprinted.fingerprint, files=fingerprinted.parts)
        unchanged = _unchanged(store, fingerprinted.kn_id, source)
        if unchanged is not None:
            unchanged.seconds = time.perf_counter() - start
            return unchanged
        changed = _sync_changed_files(store, name, fingerprinted, source, start)
        if changed is not None:
            return changed
    # a network loaded in full reads its files again as it writes them (not held); a stored one is diffed whole
    lazy = full or (fingerprinted is not None and not _stored(store, fingerprinted.kn_id))
    with gc_paused() if not lazy else nullcontext():  # a stored network's whole state is read and held
        network, instances, links = build_named(name, data_dir, kn_id, lazy=lazy)
    with tokenize_cache():
        embedder = network_embedder(network, instances, get_settings(), log=log)
        if full:
            loaded = store.load(network, instances, links, embedder=embedder, source=source, progress=progress,
                                defer_vectors=defer_vectors)
            return ChangeStats(kn_id=loaded.kn_id, version=loaded.version, instances_inserted=loaded.instances,
                               links_inserted=loaded.links, full_reload=True, note="--full: replaced in full",
                               seconds=time.perf_counter() - start)
        stats = store.sync(network, instances, links, embedder=embedder, source=source, progress=progress,
                           defer_vectors=defer_vectors)
    stats.seconds = time.perf_counter() - start
    return stats

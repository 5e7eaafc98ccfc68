"""Embedded SPARQL store: ``pyoxigraph.Store`` on a persistent directory (or in memory)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pyoxigraph as ox

from kgrag.errors import SparqlError
from kgrag.graph.store import GraphStore, Row, Term

_PLAIN = {"http://www.w3.org/2001/XMLSchema#string", "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"}


def _term(node: object) -> Term:
    if isinstance(node, ox.NamedNode):
        return Term("uri", node.value)
    if isinstance(node, ox.Literal):
        datatype = node.datatype.value if node.datatype is not None else None
        return Term("literal", node.value, node.language, None if datatype in _PLAIN else datatype)
    if isinstance(node, ox.BlankNode):
        return Term("bnode", node.value)
    return Term("literal", str(node))


class OxigraphStore(GraphStore):
    """pyoxigraph store; ``path=None`` keeps everything in memory. ``read_only`` allows several readers.

    Local queries are not interruptible, so ``timeout`` is accepted for interface parity and not enforced.
    """

    def __init__(self, path: Path | None = None, read_only: bool = False) -> None:
        self.path = Path(path) if path is not None else None
        self.location = str(self.path) if self.path else ":memory:"
        if self.path is None:
            self._store = ox.Store()
        elif read_only:
            if not self.path.is_dir():
                raise SparqlError(f"no Oxigraph store at {self.path}; run `kgrag prepare` first")
            self._store = ox.Store.read_only(str(self.path))
        else:
            self._store = ox.Store(str(self.path))

    @property
    def raw(self) -> ox.Store:
        """The underlying ``pyoxigraph.Store`` (for bulk operations)."""
        return self._store

    def bulk_load_file(self, path: Path) -> None:
        """Bulk-load an N-Triples file (fast path: writes new SST files, no transaction log)."""
        self._store.bulk_load(path=str(path), format=ox.RdfFormat.N_TRIPLES)
        self._store.flush()

    def _query(self, query: str) -> object:
        try:
            return self._store.query(query)
        except SyntaxError as exc:
            raise SparqlError(f"invalid SPARQL query: {exc}") from exc

    def select(self, query: str, timeout: float | None = None) -> list[Row]:
        result = self._query(query)
        if not isinstance(result, ox.QuerySolutions):
            raise SparqlError("select() needs a SELECT query")
        names = [v.value for v in result.variables]
        rows: list[Row] = []
        for solution in result:
            row: Row = {}
            for name in names:
                node = solution[name]
                if node is not None:
                    row[name] = _term(node)
            rows.append(row)
        return rows

    def ask(self, query: str, timeout: float | None = None) -> bool:
        result = self._query(query)
        if not isinstance(result, ox.QueryBoolean):
            raise SparqlError("ask() needs an ASK query")
        return bool(result)

    def count_triples(self) -> int:
        return len(self._store)

    def close(self) -> None:
        store = getattr(self, "_store", None)
        if store is not None:
            del self._store


def build_store(ntriples: Path, target: Path) -> int:
    """(Re)build the store at ``target`` from an N-Triples file, atomically; returns the triple count.

    The new store is built beside the target and swapped in only when complete, so a failed load leaves the
    previous store intact, and running it twice gives the same store (never duplicates).
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = target.with_name(target.name + f".building{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    store = OxigraphStore(staging)
    try:
        store.bulk_load_file(ntriples)
        count = store.count_triples()
    finally:
        store.close()
        del store
    old = target.with_name(target.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if target.exists():
        os.replace(target, old)
    os.replace(staging, target)
    shutil.rmtree(old, ignore_errors=True)
    return count


def backup_store(source: Path, target: Path) -> None:
    """A checkpoint of the store at ``source`` in the new folder ``target`` (RocksDB hard links: cheap, and the
    source stays as it was); the source is opened read-only, so serving processes may hold it meanwhile."""
    reader = ox.Store.read_only(str(source))
    try:
        reader.backup(str(target))
    finally:
        del reader


def update_store(path: Path, update: str, count_query: str | None = None, expected: int | None = None) -> int:
    """Run one SPARQL UPDATE (one transaction) on the store at ``path``, opened read-write; its triple count after:
    ``expected`` (the count before plus the DATA lines known absent, minus those known present) corrected by
    ``count_query`` (a ``SELECT (COUNT(*) AS ?n)`` over the triples whose presence is not known, asked before and
    after) — or, when ``expected`` is None, the store counted (a scan of every triple)."""
    store = ox.Store(str(path))

    def counted(on: ox.Store) -> int:
        if count_query is None:
            return 0
        solutions = on.query(count_query)
        return int(next(iter(solutions))["n"].value)  # type: ignore[arg-type, index]

    try:
        before = counted(store)
        if update:
            try:
                store.update(update)
            except SyntaxError as exc:
                raise SparqlError(f"invalid SPARQL update: {exc}") from exc
        store.flush()
        if expected is None:
            return len(store)
        return expected + counted(store) - before
    finally:
        del store

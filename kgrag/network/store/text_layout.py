"""Where each scope's rows lie in the text index's id space, so that a scope is read as id ranges (SQLite).

    layout = read_layout(conn); layout.ranges(["s6976…", "scf5…"])  # [(1, 250000), (2260414, 2267929)] or None

An FTS5 query naming a scope (``scope : "s…" AND text : "term"``) walks the scope's whole doclist: on a
million-row network ~0.4 ms for a (scope, term) pair of a few dozen rows. When each scope's rows lie in a few
id runs holding no other scope's row, the same rows are ``text : "term"`` with ``rowid BETWEEN lo AND hi`` over
those runs, which FTS5 seeks to (~0.04 ms). Two parts:

- the write side, :class:`ScopeBlocks`: a full load on SQLite gives each (type, field) scope one block of ids, as
  large as the type has instances (one text row per instance and field at most), so a freshly loaded network's
  scopes are one run each; a row past its block takes the next id after every block. Incremental changes write
  their new rows sorted by scope (``changes``), so each change adds at most one run per scope it touches.
- the read side, :func:`read_layout`: the runs of every scope (maximal stretches of consecutive rows, in id order,
  of one scope), read in one statement; None when there are more than ``max_runs`` (a store written before this
  layout interleaves every instance's fields: its reads keep the scope phrase). :meth:`TextLayout.ranges` merges
  runs that follow each other into ranges, None when the scopes would need more than ``max_ranges`` reads.

Runs hold no other scope's row by construction, so reading a range needs no scope check and misses no row of
the scopes; deleted rows only leave holes. The layout describes the index at the moment it was read: the caller
keeps it for as long as the index does not change (``StoreIndex``'s text cache, by network versions).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import Connection

__all__ = ["MAX_RANGES", "MAX_RUNS", "ScopeBlocks", "TextLayout", "read_layout"]

#: more runs than this in the whole index: no layout (the rows are interleaved, not laid out by scope)
MAX_RUNS = 100_000

#: a read over more ranges than this keeps the scope phrase instead
MAX_RANGES = 16


@dataclass(frozen=True)
class TextLayout:
    """The id runs of every scope: ``runs[scope]`` is ``[(run number, first id, last id), …]`` in id order; the
    run numbers count every scope's runs in id order (consecutive numbers: nothing between the two runs)."""

    runs: Mapping[str, Sequence[tuple[int, int, int]]]
    max_ranges: int = MAX_RANGES

    def ranges(self, scopes: Iterable[str]) -> list[tuple[int, int]] | None:
        """The id ranges holding every row of ``scopes`` and no other row, in id order (runs that follow each
        other merged); ``[]`` when the scopes hold no row; None when more than ``max_ranges``."""
        found = sorted(run for scope in set(scopes) for run in self.runs.get(scope, ()))
        out: list[list[int]] = []
        last = -2
        for number, lo, hi in found:
            if out and number == last + 1:
                out[-1][1] = hi
            else:
                out.append([lo, hi])
            last = number
        if len(out) > self.max_ranges:
            return None
        return [(lo, hi) for lo, hi in out]


def read_layout(conn: Connection, max_runs: int = MAX_RUNS, max_ranges: int = MAX_RANGES) -> TextLayout | None:
    """The runs of every scope of ``kn_text_rows`` (module docstring); None when there are more than
    ``max_runs``. One grouped statement (SQLite runs it without the interpreter lock), then numpy: ~1.3 s for
    2.3M rows."""
    grouped = conn.exec_driver_sql("SELECT scope, group_concat(id) FROM kn_text_rows GROUP BY scope").fetchall()
    if not grouped:
        return TextLayout({}, max_ranges)
    parts = [np.fromstring(ids, dtype=np.int64, sep=",") for _, ids in grouped]
    ids = np.concatenate(parts)
    codes = np.repeat(np.arange(len(parts), dtype=np.int64), [len(p) for p in parts])
    order = np.argsort(ids, kind="stable")
    ids, codes = ids[order], codes[order]
    starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
    if len(starts) > max_runs:
        return None
    ends = np.r_[starts[1:], len(ids)] - 1
    runs: dict[str, list[tuple[int, int, int]]] = {}
    for number, (code, lo, hi) in enumerate(zip(codes[starts].tolist(), ids[starts].tolist(), ids[ends].tolist(),
                                                strict=True)):
        runs.setdefault(grouped[code][0], []).append((number, lo, hi))
    return TextLayout(runs, max_ranges)


class ScopeBlocks:
    """Explicit ids for a full load's text rows (SQLite): scope ``s`` gets ids ``[start_s, start_s + size_s)``,
    the blocks one after another from ``first`` in the order given; a row of a scope without a block, or past its
    block's end, takes the next id after every block (module docstring)."""

    def __init__(self, first: int, sizes: Mapping[str, int]) -> None:
        self._next: dict[str, int] = {}
        self._end: dict[str, int] = {}
        position = first
        for scope, size in sizes.items():
            self._next[scope] = position
            position += max(int(size), 0)
            self._end[scope] = position
        self._after = position

    def assign(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Give each row (a ``kn_text_rows`` dict with its ``scope``) its ``id``, in place; returns ``rows``."""
        for row in rows:
            scope = row["scope"]
            position = self._next.get(scope)
            if position is not None and position < self._end[scope]:
                row["id"] = position
                self._next[scope] = position + 1
            else:
                row["id"] = self._after
                self._after += 1
        return rows

"""Arrays mapped from disk instead of loaded: the members of an uncompressed ``.npz`` as read-only memory maps,
and a column of strings kept as one UTF-8 buffer + offsets (no Python string until one is asked for).

    arrays = map_npz("work/metaqa/graph.npz")      # {member: read-only array backed by the file's pages}
    names = StringColumn(arrays["entity_names__data"], arrays["entity_names__offsets"]); names[42]

``np.savez`` stores members uncompressed (ZIP_STORED), so each member is a ``.npy`` at a fixed offset of the file:
:func:`map_npz` reads the zip directory and each member's ``.npy`` header and maps the data with ``np.memmap``
(mode ``r``). Processes mapping one file share its pages through the OS page cache: a server's workers or Dask
workers hold one copy of a graph, whatever its size, and opening it costs milliseconds.
"""

from __future__ import annotations

import bisect
import struct
import zipfile
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np

__all__ = ["map_npz", "pack_strings", "StringColumn", "SortedIndex", "string_hashes"]

_LOCAL_HEADER = 30  # fixed part of a zip local file header; name and extra field follow it


def map_npz(path: Path) -> dict[str, np.ndarray]:
    """Every member of the uncompressed ``.npz`` at ``path`` as a read-only array mapped from the file."""
    path = Path(path)
    out: dict[str, np.ndarray] = {}
    with zipfile.ZipFile(path) as archive, path.open("rb") as fh:
        for info in archive.infolist():
            if info.compress_type != zipfile.ZIP_STORED:
                raise ValueError(f"{path}: member {info.filename} is compressed; it cannot be mapped")
            fh.seek(info.header_offset)
            local = fh.read(_LOCAL_HEADER)
            name_len, extra_len = struct.unpack("<HH", local[26:30])
            fh.seek(info.header_offset + _LOCAL_HEADER + name_len + extra_len)
            version = np.lib.format.read_magic(fh)
            read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                           else np.lib.format.read_array_header_2_0)
            shape, fortran, dtype = read_header(fh)
            offset = fh.tell()
            name = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
            if dtype.hasobject:
                raise ValueError(f"{path}: member {name} holds Python objects; it cannot be mapped")
            if int(np.prod(shape)) == 0:
                out[name] = np.zeros(shape, dtype=dtype)
                continue
            mapped = np.memmap(path, dtype=dtype, mode="r", offset=offset, shape=shape,
                               order="F" if fortran else "C")
            out[name] = np.asarray(mapped)  # a plain ndarray view of the mapped pages
    return out


def pack_strings(strings: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """``strings`` as one UTF-8 buffer (uint8) and ``len + 1`` int64 offsets."""
    column = strings if isinstance(strings, StringColumn) else StringColumn.pack(strings)
    return column.data, column.offsets


class StringColumn(Sequence[str]):
    """A read-only sequence of strings over a UTF-8 buffer and offsets (mapped or in memory): ``col[i]`` decodes
    one string; iterating decodes them all (what only whole-vocabulary work should do)."""

    __slots__ = ("data", "offsets", "_raw")

    def __init__(self, data: np.ndarray, offsets: np.ndarray) -> None:
        self.data = data
        self.offsets = offsets
        self._raw = memoryview(data) if data.size else memoryview(b"")

    @classmethod
    def pack(cls, strings: Iterable[str]) -> StringColumn:
        """Strings (any iterable) as a column, appended to one growing buffer: no list of every encoded string."""
        offsets = array("q", [0])
        buffer = bytearray()
        for text in strings:
            buffer += text.encode("utf-8")
            offsets.append(len(buffer))
        return cls(np.frombuffer(buffer, dtype=np.uint8), np.frombuffer(offsets, dtype=np.int64))

    def __len__(self) -> int:
        return int(self.offsets.shape[0]) - 1

    def __getitem__(self, index):  # type: ignore[override]
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        i = int(index)
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(f"row {index} out of range ({len(self)} strings)")
        return bytes(self._raw[int(self.offsets[i]) : int(self.offsets[i + 1])]).decode("utf-8")

    def take(self, rows: Sequence[int] | np.ndarray) -> list[str]:
        """The strings of ``rows``, in order."""
        return [self[int(r)] for r in np.asarray(rows, dtype=np.int64).tolist()]

    def __iter__(self) -> Iterator[str]:
        raw = bytes(self._raw)
        bounds = self.offsets.tolist()
        for a, b in zip(bounds[:-1], bounds[1:], strict=True):
            yield raw[a:b].decode("utf-8")

    def lengths(self) -> np.ndarray:
        """Byte length of every string (0 = empty), vectorised."""
        return np.diff(self.offsets)

    def _heads(self, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """The first 8 bytes of each string (zero padded) as one uint64 each, vectorised."""
        at = starts[:, None] + np.arange(8)
        inside = np.arange(8) < lengths[:, None]
        raw = np.where(inside, self.data[np.minimum(at, max(self.data.size - 1, 0))] if self.data.size else 0, 0)
        return raw.astype(np.uint8).view(np.uint64).ravel() if raw.size else np.zeros(0, np.uint64)

    def find(self, values: Iterable[str], chunk: int = 1 << 20) -> dict[str, list[int]]:
        """The rows holding each of ``values`` (ascending; values no row holds are left out): one vectorised pass
        over every string's length and first 8 bytes, then only the few rows that match both are decoded (what
        resolving a question file's names costs on a graph of millions of names)."""
        wanted = {v: v.encode("utf-8") for v in set(values) if v}
        if not wanted or not len(self):
            return {}
        encoded = list(wanted.values())
        w_len = np.array([len(b) for b in encoded], dtype=np.int64)
        w_head = np.frombuffer(b"".join(b[:8].ljust(8, b"\0") for b in encoded), dtype=np.uint64)
        keys = np.unique(w_head ^ (w_len.astype(np.uint64) << np.uint64(56)))
        by_bytes = {b: v for v, b in wanted.items()}
        found: dict[str, list[int]] = {}
        for start in range(0, len(self), chunk):
            stop = min(start + chunk, len(self))
            lengths = self.offsets[start + 1 : stop + 1] - self.offsets[start:stop]
            heads = self._heads(self.offsets[start:stop], lengths)
            rows = np.flatnonzero(np.isin(heads ^ (lengths.astype(np.uint64) << np.uint64(56)), keys)) + start
            for row in rows.tolist():
                value = by_bytes.get(bytes(self._raw[int(self.offsets[row]) : int(self.offsets[row + 1])]))
                if value is not None:
                    found.setdefault(value, []).append(row)
        return found

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str):
            return len(other) == len(self) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"StringColumn({len(self)} strings, {self.data.size} bytes)"


class SortedIndex(Mapping[str, int]):
    """string → row over a column, by binary search through ``order`` (the rows sorted by their string; ``None``
    when the column itself is sorted). No dict of every string: a lookup decodes ~log2(n) strings."""

    def __init__(self, column: Sequence[str], order: np.ndarray | None = None) -> None:
        self.column = column
        self.order = order

    def _row(self, i: int) -> int:
        return i if self.order is None else int(self.order[i])

    def _find(self, key: str) -> int:
        n = len(self.column)
        at = bisect.bisect_left(range(n), key, key=lambda i: self.column[self._row(i)])
        if at < n:
            row = self._row(at)
            if self.column[row] == key:
                return row
        return -1

    def __getitem__(self, key: str) -> int:
        row = self._find(key) if isinstance(key, str) else -1
        if row < 0:
            raise KeyError(key)
        return row

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self._find(key) >= 0

    def __len__(self) -> int:
        return len(self.column)

    def __iter__(self) -> Iterator[str]:
        for i in range(len(self.column)):
            yield self.column[self._row(i)]


def string_hashes(column: Sequence[str], chunk_bytes: int = 1 << 20) -> np.ndarray:
    """A 64-bit hash of every string of ``column``: a polynomial over its UTF-8 bytes (wrapping uint64) mixed with
    its length, vectorised over the packed buffer a chunk of about ``chunk_bytes`` at a time (one
    ``np.add.reduceat`` per chunk; memory: a few times the chunk, never the column). Equal strings hash equal; a
    caller that needs certainty compares the strings a hash match points at."""
    column = column if isinstance(column, StringColumn) else StringColumn.pack(column)
    offsets = np.asarray(column.offsets, dtype=np.int64)
    data = np.asarray(column.data)
    lengths = np.diff(offsets)
    out = lengths.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    if not data.size:
        return out
    with np.errstate(over="ignore"):
        powers = np.cumprod(np.full(int(lengths.max()) + 1, 1099511628211, dtype=np.uint64))
        bounds = np.unique(np.searchsorted(offsets, np.arange(0, int(offsets[-1]), chunk_bytes), side="right") - 1)
        bounds = np.append(bounds, lengths.size)
        for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):  # a loop over chunks, not rows
            starts, size = offsets[lo:hi], lengths[lo:hi]
            nonempty = size > 0
            if not nonempty.any():
                continue
            a, b = int(offsets[lo]), int(offsets[hi])
            owner = np.repeat(np.arange(hi - lo, dtype=np.int64), size)
            position = np.arange(a, b, dtype=np.int64) - starts[owner]
            mixed = (data[a:b].astype(np.uint64) + np.uint64(1)) * powers[position]
            out[lo:hi][nonempty] ^= np.add.reduceat(mixed, starts[nonempty] - a)
    return out

"""The haystack: MetaQA's knowledge base embedded in N synthetic triples, one gzipped N-Triples file for the generic
import (``kgrag prepare --dataset NAME --triples FILE.nt.gz --questions <data>/metaqa/1-hop/dev.txt``).

    .venv/bin/python -m bench.haystack_data --n 1000000 --out /tmp/hay1m.nt.gz   # prints the stats as JSON

Contract (the same ``(n_synthetic, seed, parameters)`` give the same bytes; gzip header mtime 0):

- MetaQA: every ``head|relation|tail`` line of ``kb.txt`` (fields stripped, as the import reads them) as a triple
  ``<…/haystack/m/<slug>> <…/haystack/r/<relation>> <…/haystack/m/<slug>>`` (:func:`metaqa_entity_iri`: an
  injective, IRI-safe encoding of the name), and one ``rdfs:label`` per entity carrying its exact name. The import
  mints the relation names as MetaQA's (``directed_by``, …) and resolves MetaQA's questions by name.
- Synthetic: exactly ``n_synthetic`` triples over ``round(n_synthetic * entities_per_triple)`` entities
  ``<…/haystack/s/<int>>``, each with one ``rdfs:label`` (:func:`synthetic_name`: syllables and the entity's number,
  never a MetaQA name after the import's normalisation — checked) and at least one edge. A synthetic-synthetic
  triple joins a *hub* end (Zipf over entity ranks, exponent ``hub_exponent``: entity 0 is the biggest hub) to a
  *leaf* end (a milder Zipf, ``leaf_exponent``; every entity is a leaf end at least once), in a random direction, so degrees
  are heavy-tailed (median about 3, the top hubs with a few % of the edges) and duplicate triples rare. Relations
  are Freebase whitelist names (``http://rdf.freebase.com/ns/<dotted name>``), Zipf-weighted over a seeded order.
- ``round(n_synthetic * metaqa_share)`` of the synthetic triples have one end at a MetaQA entity, chosen in
  proportion to its MetaQA degree (an end of a uniformly drawn kb line), the other end a uniformly drawn synthetic
  entity, in a random direction: every MetaQA neighbourhood grows (a question's walk meets the distractors at its
  first hop) without giant synthetic hubs joining MetaQA entities into 2-hop shortcuts, which would rewrite the
  questions' shortest paths and so their labels, i.e. change the task rather than hide it.
- Layout: kb triples, MetaQA labels, then per chunk of :data:`CHUNK` synthetic triples the labels of the entities
  it covers, its synthetic-synthetic triples, its MetaQA-attached triples. Chunks draw from their own seeded
  generators; lines are formatted per batch (memory bounded by a chunk, never by N) and gzipped at level 1.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import re
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from kgrag.data.freebase import FREEBASE_NS, read_relation_whitelist
from kgrag.prep.resolve import normalise

__all__ = ["CHUNK", "HaystackStats", "generate", "metaqa_entity_iri", "metaqa_relation_iri", "question_files",
           "read_kb", "synthetic_entity_iri", "synthetic_name", "synthetic_names"]

BASE = "http://example.org/haystack/"
METAQA_NS = BASE + "m/"
RELATION_NS = BASE + "r/"
SYNTHETIC_NS = BASE + "s/"
LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
#: synthetic triples per chunk (part of the output's identity: each chunk has its own generator)
CHUNK = 1_000_000
_BATCH = 250_000  # lines formatted and compressed at once
_SYN = SYNTHETIC_NS.encode()
_SYN_LINE = b"<" + _SYN + b"%d%s%d> .\n"  # head id, b"> <relation> <…/s/", tail id
_LABEL_LINE = b"<" + _SYN + b'%d> <' + LABEL.encode() + b'> "%s %s %d" .\n'
_MQ_LINE = b"%s %s %s .\n"

# IRI path characters kept as they are (RFC 3987 iunreserved and sub-delims, "@"); "_" stands for a space, so "_"
# and "%" themselves are percent-encoded like everything else (the encoding stays injective)
_IRI_KEEP = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.~!$&'()*+,;=@")
_NEEDS_ENCODING = re.compile(r"[^A-Za-z0-9\-.~!$&'()*+,;=@ ]")  # outside _IRI_KEEP and the space
_NEEDS_ESCAPE = re.compile(r'["\\\n\r]')
_RELATION_SAFE = re.compile(r"^[A-Za-z0-9_.]+$")
_ONSETS = ("b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "dr", "gr", "kr", "st",
           "tr", "sh", "ch")
_VOWELS = ("a", "e", "i", "o", "u")
_FIRST_ENDS = ("", "n", "r", "l", "s")
_LAST_ENDS = ("ski", "son", "ra", "ley", "ton", "vic", "ini", "berg", "ard", "ez")
_SYNTHETIC_NAME_RE = re.compile(r"^([a-z]+) ([a-z]+) (0|[1-9][0-9]*)$")
_DIGIT = re.compile(r"[0-9]")
_HASH1 = np.uint64(0x9E3779B97F4A7C15)
_HASH2 = np.uint64(0xC2B2AE3D27D4EB4F)


@dataclass
class HaystackStats:
    """What :func:`generate` wrote (``triples_total`` counts every line, labels included)."""

    path: str
    n_synthetic: int
    seed: int
    metaqa_triples: int  # kb.txt lines written
    synthetic_triples: int  # == n_synthetic
    metaqa_attached: int  # synthetic triples with one end at a MetaQA entity
    label_triples: int
    metaqa_entities: int
    synthetic_entities: int
    entities: int
    triples_total: int
    bytes: int  # gzipped
    raw_bytes: int  # uncompressed N-Triples
    seconds: float
    triples_per_s: float  # triples_total / seconds
    bytes_per_triple: float  # gzipped bytes / triples_total
    sha256: str


def _escape_literal(text: str) -> str:
    if not _NEEDS_ESCAPE.search(text):
        return text
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")


def _iri_char(c: str) -> str:
    if c in _IRI_KEEP:
        return c
    if c == " ":
        return "_"
    cp = ord(c)
    ucs = cp >= 0xA0 and not (0xD800 <= cp <= 0xF8FF or 0xFDD0 <= cp <= 0xFDEF or (cp & 0xFFFE) == 0xFFFE)
    return c if ucs else "".join(f"%{b:02X}" for b in c.encode("utf-8"))


def metaqa_entity_iri(name: str) -> str:
    """The IRI of a MetaQA entity: ``http://example.org/haystack/m/`` and the name with spaces as ``_``, other
    characters an IRI path segment may not hold (``_`` and ``%`` included) percent-encoded — one IRI per name."""
    if not _NEEDS_ENCODING.search(name):
        return METAQA_NS + name.replace(" ", "_")
    return METAQA_NS + "".join(map(_iri_char, name))


def metaqa_relation_iri(relation: str) -> str:
    """``http://example.org/haystack/r/<relation>``: the import names it ``relation`` (its last segment; ``_``
    kept, other characters as in :func:`metaqa_entity_iri`)."""
    return RELATION_NS + "".join("_" if c == "_" else _iri_char(c) for c in relation)


def synthetic_entity_iri(i: int) -> str:
    return f"{SYNTHETIC_NS}{int(i)}"


@functools.cache
def _name_tables() -> tuple[np.ndarray, np.ndarray]:
    syllables = [o + v for o in _ONSETS for v in _VOWELS]
    first = [(a + b + e).capitalize().encode() for a in syllables for b in syllables for e in _FIRST_ENDS]
    last = [(a + b + e).capitalize().encode() for a in syllables for b in syllables for e in _LAST_ENDS]
    return np.array(first, dtype=object), np.array(last, dtype=object)


def _name_parts(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """First and last names (bytes, object arrays) of synthetic entities, from the ids alone."""
    first, last = _name_tables()
    x = (np.asarray(ids, dtype=np.uint64) + np.uint64(1)) * _HASH1
    y = (x ^ (x >> np.uint64(29))) * _HASH2
    return first[(x >> np.uint64(33)) % np.uint64(len(first))], last[(y >> np.uint64(33)) % np.uint64(len(last))]


def synthetic_names(ids: np.ndarray) -> list[str]:
    """:func:`synthetic_name` of each id."""
    ids = np.asarray(ids, dtype=np.int64)
    first, last = _name_parts(ids)
    return [f"{f.decode()} {g.decode()} {i}" for f, g, i in zip(first.tolist(), last.tolist(), ids.tolist(),
                                                                    strict=True)]


def synthetic_name(i: int) -> str:
    """The label of synthetic entity ``i``: two syllable-built words and the number (``Tribon Kagevic 42``)."""
    return synthetic_names(np.array([i]))[0]


def read_kb(path: Path) -> list[tuple[str, str, str]]:
    """``head|relation|tail`` (or tab-separated) lines as the import reads them: fields stripped, blank, ``#`` and
    malformed lines skipped."""
    out = []
    for line in Path(path).read_text(encoding="utf-8", errors="replace").splitlines():
        parts = line.split("\t") if "\t" in line else line.split("|")
        if len(parts) == 3 and not line.lstrip().startswith("#"):
            h, r, t = parts[0].strip(), parts[1].strip(), parts[2].strip()
            if h and r and t:
                out.append((h, r, t))
    return out


def question_files(split: str = "dev", hops: Sequence[int] = (1, 2, 3), data_dir: Path | None = None) -> list[Path]:
    """MetaQA's own question files as ``kgrag data download`` lays them out (``<data>/metaqa/<k>-hop/<split>.txt``,
    MetaQA's ``qa_<split>.txt``): the import reads them as they are, the hop from the folder."""
    root = (data_dir or _data_dir()) / "metaqa"
    return [root / f"{k}-hop" / f"{split}.txt" for k in hops]


def _data_dir() -> Path:
    from kgrag.config import get_settings

    return get_settings().data_dir


def _zipf_ranks(rng: np.random.Generator, n: int, size: int, exponent: float) -> np.ndarray:
    """``n`` ranks in ``[0, size)`` with density ∝ (rank + 1)^-exponent (continuous inverse CDF)."""
    u = rng.random(n)
    if exponent == 0.0:
        x = 1.0 + u * size
    elif abs(exponent - 1.0) < 1e-9:
        x = np.exp(u * np.log1p(size))
    else:
        b = 1.0 - exponent
        x = (1.0 + u * ((size + 1.0) ** b - 1.0)) ** (1.0 / b)
    return np.minimum(x.astype(np.int64) - 1, size - 1)


def _check_names(names: Sequence[str], n_entities: int) -> None:
    """Raise if a synthetic name equals (normalised) a MetaQA name: the import resolves question topics by name."""
    for name in names:
        if not _DIGIT.search(name):  # a synthetic name ends in its number
            continue
        m = _SYNTHETIC_NAME_RE.match(normalise(name))
        if m and int(m.group(3)) < n_entities and normalise(synthetic_name(int(m.group(3)))) == m.group(0):
            raise ValueError(f"synthetic entity {m.group(3)} would be named like the MetaQA entity {name!r}")


class _Writer:
    """Gzip (level 1, mtime 0) to a file, with the sha256 of the compressed bytes and the raw byte count."""

    def __init__(self, path: Path) -> None:
        self.fh = open(path, "wb")  # noqa: SIM115 (closed in close())
        self.z = zlib.compressobj(1, zlib.DEFLATED, 31)
        self.sha = hashlib.sha256()
        self.raw = 0
        self.out = 0

    def _put(self, data: bytes) -> None:
        if data:
            self.fh.write(data)
            self.sha.update(data)
            self.out += len(data)

    def write(self, data: bytes) -> None:
        self.raw += len(data)
        self._put(self.z.compress(data))

    def close(self) -> None:
        self._put(self.z.flush())
        self.fh.close()


def generate(path: Path, n_synthetic: int, seed: int = 0, kb: Path | None = None, metaqa_share: float = 0.1,
             entities_per_triple: float = 0.25, progress: Callable[[int, int], None] | None = None, *,
             relations: Sequence[str] | None = None, hub_exponent: float = 1.0, leaf_exponent: float = 0.7,
             relation_exponent: float = 1.0) -> HaystackStats:
    """Write the haystack to ``path`` (gzipped N-Triples; see the module docstring) and return its stats.

    ``kb``: MetaQA's ``kb.txt`` (default ``<data>/metaqa/kb.txt``); ``relations``: dotted Freebase relation names
    (default the CWQ whitelist ``<data>/freebase/filtered_cwq_white_list.json``); ``progress(done, n_synthetic)``
    after each chunk. The file is written beside ``path`` and renamed into place when complete."""
    t0 = time.perf_counter()
    path = Path(path)
    n = int(n_synthetic)
    n_entities = round(n * entities_per_triple)
    n_attached = round(n * metaqa_share)
    n_plain = n - n_attached  # synthetic-synthetic triples
    if n == 1 or n < 0 or not 0.0 <= metaqa_share < 1.0:
        raise ValueError("n_synthetic must be 0 (MetaQA alone) or >= 2, and metaqa_share in [0, 1)")
    if n and not 2 <= n_entities <= n_plain:
        raise ValueError(f"{n_entities} synthetic entities for {n_plain} synthetic-synthetic triples: need "
                         f"2 <= entities <= triples (entities_per_triple <= 1 - metaqa_share)")

    kb_path = Path(kb) if kb is not None else _data_dir() / "metaqa" / "kb.txt"
    lines = read_kb(kb_path)
    if not lines:
        raise ValueError(f"no head|relation|tail line in {kb_path}")
    index: dict[str, int] = {}
    ends: list[int] = []  # head, tail of each kb line
    for h, _, t in lines:
        ends.append(index.setdefault(h, len(index)))
        ends.append(index.setdefault(t, len(index)))
    names = list(index)
    _check_names(names, n_entities)
    iri_of = {x: f"<{metaqa_entity_iri(x)}>" for x in names}
    mq_iri = np.array([iri.encode() for iri in iri_of.values()], dtype=object)
    kb_ends = np.array(ends, dtype=np.int64)

    if relations is None:
        relations = read_relation_whitelist(_data_dir() / "freebase" / "filtered_cwq_white_list.json")
    rel_names = [r for r in dict.fromkeys(relations) if _RELATION_SAFE.match(r)]
    if not rel_names:
        raise ValueError("no usable Freebase relation name")
    order = np.random.default_rng((seed, 1 << 32)).permutation(len(rel_names))
    rel_iri = np.array([f"<{FREEBASE_NS}{rel_names[i]}>".encode() for i in order], dtype=object)
    rel_mid = np.array([b"> " + r + b" <" + _SYN for r in rel_iri], dtype=object)
    rel_cdf = np.cumsum(np.arange(1, len(rel_iri) + 1, dtype=np.float64) ** -relation_exponent)
    rel_cdf /= rel_cdf[-1]

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".part")
    out = _Writer(tmp)
    label_pred = f" <{LABEL}> ".encode()
    try:
        rel_cache = {r: f"<{metaqa_relation_iri(r)}>" for r in dict.fromkeys(r for _, r, _ in lines)}
        for s in range(0, len(lines), _BATCH):
            out.write("".join(f"{iri_of[h]} {rel_cache[r]} {iri_of[t]} .\n"
                              for h, r, t in lines[s:s + _BATCH]).encode())
        for s in range(0, len(names), _BATCH):
            out.write(b"".join(mq_iri[i] + label_pred + b'"' + _escape_literal(names[i]).encode() + b'" .\n'
                               for i in range(s, min(s + _BATCH, len(names)))))

        done = 0
        for k, start in enumerate(range(0, n, CHUNK)):
            end = min(n, start + CHUNK)
            size = end - start
            a0, a1 = start * n_attached // n, end * n_attached // n
            m = a1 - a0  # MetaQA-attached rows of this chunk (its last m rows)
            p0 = start - a0
            lo, hi = p0 * n_entities // n_plain, (p0 + size - m) * n_entities // n_plain  # entities it covers
            rng = np.random.default_rng((seed, k))
            hub = _zipf_ranks(rng, size, n_entities, hub_exponent)
            leaf = _zipf_ranks(rng, size, n_entities, leaf_exponent)
            rel = np.minimum(np.searchsorted(rel_cdf, rng.random(size), side="right"), len(rel_iri) - 1)
            flip = rng.random(size) < 0.5
            leaf[:hi - lo] = np.arange(lo, hi)
            plain = size - m
            loop = hub[:plain] == leaf[:plain]
            hub[:plain][loop] = (hub[:plain][loop] + 1) % n_entities
            head = np.where(flip[:plain], leaf[:plain], hub[:plain])
            tail = np.where(flip[:plain], hub[:plain], leaf[:plain])

            ids = np.arange(lo, hi)
            for s in range(0, len(ids), _BATCH):
                batch = ids[s:s + _BATCH]
                first, last = _name_parts(batch)
                il = batch.tolist()
                out.write(b"".join(map(_LABEL_LINE.__mod__, zip(il, first.tolist(), last.tolist(), il, strict=True))))
            for s in range(0, plain, _BATCH):
                e = min(plain, s + _BATCH)
                out.write(b"".join(map(_SYN_LINE.__mod__, zip(head[s:e].tolist(), rel_mid[rel[s:e]].tolist(),
                                                              tail[s:e].tolist(), strict=True))))
            if m:
                j = rng.integers(0, len(lines), m)
                mq = kb_ends[2 * j + (rng.random(m) < 0.5)]  # an end of a kb line: ∝ degree
                syn = rng.integers(0, n_entities, m)  # uniform: no topic → hub → answer shortcut
                syn_iri = [b"<%s%d>" % (_SYN, i) for i in syn.tolist()]
                mq_tok = mq_iri[mq].tolist()
                mq_head = flip[plain:].tolist()
                rel_tok = rel_iri[rel[plain:]].tolist()
                out.write(b"".join([_MQ_LINE % ((q, r, y) if f else (y, r, q))
                                    for q, r, y, f in zip(mq_tok, rel_tok, syn_iri, mq_head, strict=True)]))
            done = end
            if progress is not None:
                progress(done, n)
        out.close()
    except BaseException:
        out.fh.close()
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, path)
    seconds = time.perf_counter() - t0
    total = len(lines) + len(names) + n + n_entities
    return HaystackStats(
        path=str(path), n_synthetic=n, seed=seed, metaqa_triples=len(lines), synthetic_triples=n,
        metaqa_attached=n_attached, label_triples=len(names) + n_entities, metaqa_entities=len(names),
        synthetic_entities=n_entities, entities=len(names) + n_entities, triples_total=total, bytes=out.out,
        raw_bytes=out.raw, seconds=round(seconds, 3), triples_per_s=round(total / seconds, 1),
        bytes_per_triple=round(out.out / total, 2), sha256=out.sha.hexdigest())


def main(argv: Sequence[str] | None = None) -> HaystackStats:
    parser = argparse.ArgumentParser(prog="python -m bench.haystack_data", description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, required=True, help="synthetic triples")
    parser.add_argument("--out", type=Path, required=True, help="the .nt.gz file to write")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--kb", type=Path, default=None, help="MetaQA kb.txt (default <data>/metaqa/kb.txt)")
    parser.add_argument("--metaqa-share", type=float, default=0.1)
    parser.add_argument("--entities-per-triple", type=float, default=0.25)
    args = parser.parse_args(argv)
    stats = generate(args.out, args.n, seed=args.seed, kb=args.kb, metaqa_share=args.metaqa_share,
                     entities_per_triple=args.entities_per_triple,
                     progress=lambda done, n: print(f"{done:,}/{n:,} synthetic triples", flush=True))
    print(json.dumps(asdict(stats), indent=2))
    print(f"{stats.triples_per_s:,.0f} triples/s, {stats.bytes_per_triple} bytes/triple (gzipped)")
    return stats


if __name__ == "__main__":
    main()

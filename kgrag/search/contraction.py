"""Contractions (简称) learned from the other names a network records: how a full name is cut short (慢性支气管炎
-> 慢支: the first character of the first two word segments; 心肌梗死 -> 心梗), applied to every stored name.

    model = ContractionModel.learn([("慢性支气管炎", "慢支"), ("心肌梗死", "心梗"), ("化脓性脑膜炎", "化脑")])
    model.contractions("老年慢性支气管炎")  # [('老支', 0.2…), ('年支', 0.07…), ('慢支', 0.07…), …]

Contract:

* Names are folded (:func:`kgrag.search.name_ngrams.fold`) and cut into word segments
  (:func:`kgrag.search.name_segments.segments`). A contraction keeps, of each segment, one of :data:`PATTERNS`:
  nothing ``-``, the whole segment ``W``, its first character ``F``, its last ``L``, first and last ``FL``, or its
  first two ``P2``.
* :meth:`ContractionModel.learn` reads ``(full name, other name)`` pairs and keeps those where the other name is a
  shorter, *non-contiguous* character subsequence of the full name (a contiguous one is a contains match, not a
  contraction). Each such pair is aligned to per-segment patterns (every way the short name embeds in the long
  one that :data:`PATTERNS` can express; first weighted equally, then the likeliest under those counts) and the
  counts of ``pattern | (segment position: only/first/middle/last, segment length 1/2/3/4+, whether it ends in
  性/型/状/式)`` are kept, with the contractions' lengths; add-:data:`SMOOTHING` smoothed. Statistics of the
  data, nothing per name.
* :meth:`ContractionModel.contractions` scores every pattern sequence of a name (beam search, names of at most
  :data:`MAX_SEGMENTS` segments) and returns the contractions — 2+ characters, shorter than the name, not a
  contiguous part of it — with their probability *given that the name is contracted* (the pattern sequence's
  probability times the learned share of contractions of its length, normalised over the name's cut outputs),
  best first, those of at least ``min_p``, at most ``limit``. A model learned from no pairs contracts nothing.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import combinations

from kgrag.search.name_ngrams import fold
from kgrag.search.name_segments import segments

__all__ = ["MAX_SEGMENTS", "PATTERNS", "SMOOTHING", "ContractionModel", "is_contraction", "segment_patterns"]

PATTERNS = ("-", "W", "F", "L", "FL", "P2")
#: add-k smoothing of the pattern counts
SMOOTHING = 0.5
#: names with more segments are not contracted (beam search cost; such names are rarely cut short)
MAX_SEGMENTS = 8
_BEAM = 48
_MAX_ALIGNMENTS = 64

Context = tuple[str, int, bool]
#: characters that end an attributive segment (突发性, 乙型): such segments are cut differently
_ATTRIBUTIVE = "性型状式"


def _context(k: int, n: int, seg: str) -> Context:
    where = "only" if n == 1 else "first" if k == 0 else "last" if k == n - 1 else "middle"
    return where, min(len(seg), 4), len(seg) > 1 and seg[-1] in _ATTRIBUTIVE


def _valid(pattern: str, seg: str) -> bool:
    n = len(seg)
    return {"-": True, "W": True, "F": n >= 2, "L": n >= 2, "FL": n >= 3, "P2": n >= 3}[pattern]


def _apply(pattern: str, seg: str) -> str:
    return {"-": "", "W": seg, "F": seg[:1], "L": seg[-1:], "FL": seg[0] + seg[-1], "P2": seg[:2]}[pattern]


def _pattern_of(kept: Sequence[int], n: int) -> str | None:
    """The pattern keeping positions ``kept`` (sorted) of an ``n``-character segment, or None."""
    for pattern in PATTERNS:
        if _valid(pattern, "x" * n) and tuple(kept) == _positions(pattern, n):
            return pattern
    return None


def _positions(pattern: str, n: int) -> tuple[int, ...]:
    return {"-": (), "W": tuple(range(n)), "F": (0,), "L": (n - 1,), "FL": (0, n - 1), "P2": (0, 1)}[pattern]


def is_contraction(full: str, short: str) -> bool:
    """Whether folded ``short`` is a shorter, non-contiguous character subsequence of folded ``full``."""
    f, s = fold(full), fold(short)
    if not 2 <= len(s) < len(f) or s in f:
        return False
    it = iter(f)
    return all(c in it for c in s)


def _embeddings(full: str, short: str) -> Iterator[tuple[int, ...]]:
    """Every way ``short`` embeds in ``full`` as a subsequence (positions), at most :data:`_MAX_ALIGNMENTS`."""
    count = 0
    for positions in combinations(range(len(full)), len(short)):
        if all(full[p] == c for p, c in zip(positions, short, strict=True)):
            yield positions
            count += 1
            if count >= _MAX_ALIGNMENTS:
                return


def segment_patterns(full: str, short: str) -> list[tuple[str, ...]]:
    """The per-segment pattern sequences that turn ``full`` into ``short`` (folded), one per alignment."""
    f, s = fold(full), fold(short)
    segs = segments(full)
    if not segs or len(segs) > MAX_SEGMENTS or len(s) > 8:
        return []
    bounds, start = [], 0
    for seg in segs:
        bounds.append((start, start + len(seg)))
        start += len(seg)
    out: list[tuple[str, ...]] = []
    for positions in _embeddings(f, s):
        seq: list[str] = []
        for lo, hi in bounds:
            pattern = _pattern_of([p - lo for p in positions if lo <= p < hi], hi - lo)
            if pattern is None:
                break
            seq.append(pattern)
        else:
            if tuple(seq) not in out:
                out.append(tuple(seq))
    return out


@dataclass
class ContractionModel:
    """``P(pattern | segment context)`` from counts (see the module docstring)."""

    counts: dict[Context, Counter[str]] = field(default_factory=dict)
    #: contraction lengths (characters) of the learned pairs
    lengths: Counter[int] = field(default_factory=Counter)
    pairs: int = 0
    _cache: dict[Context, dict[str, float]] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def learn(cls, pairs: Iterable[tuple[str, str]]) -> ContractionModel:
        aligned: list[tuple[tuple[Context, ...], list[tuple[str, ...]]]] = []
        lengths: Counter[int] = Counter()
        for full, short in pairs:
            if not is_contraction(full, short):
                continue
            options = segment_patterns(full, short)
            if options:
                segs = segments(full)
                lengths[len(fold(short))] += 1
                aligned.append((tuple(_context(k, len(segs), seg) for k, seg in enumerate(segs)), options))
        model = cls(pairs=len(aligned))
        for contexts, options in aligned:  # pass 1: every alignment weighted equally
            for seq in options:
                model._count(contexts, seq, 1 / len(options))
        final = cls(pairs=len(aligned), lengths=lengths)
        for contexts, options in aligned:  # pass 2: the likeliest alignment under pass 1
            best = max(options, key=lambda seq, c=contexts: model._logp(c, seq))
            final._count(contexts, best, 1.0)
        return final

    def _count(self, contexts: Sequence[Context], seq: Sequence[str], weight: float) -> None:
        for ctx, pattern in zip(contexts, seq, strict=True):
            self.counts.setdefault(ctx, Counter())[pattern] += weight  # type: ignore[assignment]

    def p(self, ctx: Context, pattern: str) -> float:
        """Smoothed ``P(pattern | ctx)`` over the patterns valid for the context's segment length."""
        return math.exp(self._table(ctx)[pattern])

    def _table(self, ctx: Context) -> dict[str, float]:
        """log P(pattern | ctx) of the patterns valid in ``ctx`` (computed once per context)."""
        table = self._cache.get(ctx)
        if table is None:
            table = self._cache[ctx] = {q: math.log(self._p(ctx, q)) for q in PATTERNS if _valid(q, "x" * ctx[1])}
        return table

    def _p(self, ctx: Context, pattern: str) -> float:
        counts = self.counts.get(ctx, Counter())
        valid = [q for q in PATTERNS if _valid(q, "x" * ctx[1])]
        total = sum(counts[q] for q in valid)
        return (counts[pattern] + SMOOTHING) / (total + SMOOTHING * len(valid))

    def p_length(self, n: int) -> float:
        """Smoothed share of learned contractions ``n`` characters long (2..8)."""
        return (self.lengths[n] + SMOOTHING) / (sum(self.lengths.values()) + SMOOTHING * 7)

    def _logp(self, contexts: Sequence[Context], seq: Sequence[str]) -> float:
        return sum(self._table(c)[q] for c, q in zip(contexts, seq, strict=True))

    def contractions(self, name: str, limit: int = 6, min_p: float = 0.01) -> list[tuple[str, float]]:
        """The name's likeliest contractions with their probability given that it is contracted."""
        if not self.pairs:
            return []
        f = fold(name)
        segs = segments(name)
        if not segs or len(segs) > MAX_SEGMENTS:
            return []
        beam: list[tuple[float, str, bool]] = [(0.0, "", False)]  # log p, text so far, something dropped
        for k, seg in enumerate(segs):
            table = self._table(_context(k, len(segs), seg))
            pieces = [(q, lq, _apply(q, seg)) for q, lq in table.items()]
            grown = [(lp + lq, text + piece, cut or q != "W") for lp, text, cut in beam for q, lq, piece in pieces]
            grown.sort(key=lambda r: -r[0])
            beam = grown[:_BEAM]
        scores: dict[str, float] = {}
        for lp, text, cut in beam:
            if cut and 2 <= len(text) < len(f):
                scores[text] = scores.get(text, 0.0) + math.exp(lp)
        scores = {t: p * self.p_length(len(t)) for t, p in scores.items()}
        total = sum(scores.values())
        out = sorted(((t, p / total) for t, p in scores.items() if t not in f), key=lambda r: (-r[1], r[0]))
        return [(t, round(p, 4)) for t, p in out if p >= min_p][:limit]

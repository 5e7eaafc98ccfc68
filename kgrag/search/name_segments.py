"""Names as word segments, and segment-level matching: a user's word whose segments each occur, in order, among a
stored name's segments with a gap between them (窦房阻滞 ~ 窦房|传导|阻滞; 慢性肾炎 ~ 慢性|肾小球|肾炎).

    SegmentIndex(["窦房传导阻滞", "窦房结"]).match("窦房阻滞")  # [(0, 0.7667)]

Contract:

* :func:`segments` cuts a folded name (:func:`kgrag.search.name_ngrams.fold`) into word segments that join to
  it: jieba's pieces (:func:`kgrag.rank.tokenize.word_pieces`), then every piece of 4+ characters split into
  dictionary words when it can be (心肌梗死 -> 心肌|梗死, 支气管炎 -> 支气管|炎: the fewest parts, each a
  dictionary word of 2+ characters or a last single character), else a 4-character piece as 2 + 2 (窦房阻滞 ->
  窦房|阻滞). Cached (names repeat).
* :meth:`SegmentIndex.match` reads the word's segments (at least :data:`MIN_SEGMENTS`; a word of one segment is
  the contains strategy's job) and finds the names holding every one of them, in order, with at least one stored
  segment left out between two of them (a word that is a substring of the name is the contains strategy's) — candidates from an inverted index (segment -> name indexes, the
  rarest segment's postings intersected with the others'), never a scan of every name. A segment of the word
  also matches when it is the concatenation of consecutive stored segments (心肌梗死 ~ 心肌|梗死).
* Score in (0, 1): the share of the name's characters the word covers, +0.1 when the word's last segment is
  the name's last (the head: 窦房阻滞 ~ …阻滞), capped at 0.99. Best first, then the shorter name, at most
  ``limit``.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from kgrag.rank.tokenize import is_word, no_dictionary_word, word_pieces
from kgrag.search.name_ngrams import fold

__all__ = ["MIN_SEGMENTS", "SegmentIndex", "segments"]

#: the fewest segments a word needs for segment matching
MIN_SEGMENTS = 2


def _split(piece: str) -> list[str]:
    """``piece`` as the fewest dictionary words (2+ characters, or a last single character), else whole (an ASCII
    piece holding none of the dictionary's few ASCII words cannot split: answered without the search — a
    million-row network's names are such pieces)."""
    n = len(piece)
    if no_dictionary_word(piece):
        return [piece[:2], piece[2:]] if n == 4 else [piece]
    best: list[list[str] | None] = [None] * (n + 1)
    best[0] = []
    for end in range(1, n + 1):
        for start in range(end - 1, -1, -1):
            prev = best[start]
            part = piece[start:end]
            if prev is None or len(part) == n or not (
                    len(part) >= 2 and is_word(part) or end == n and len(part) == 1):
                continue
            if best[end] is None or len(prev) + 1 < len(best[end]):  # type: ignore[arg-type]
                best[end] = [*prev, part]
    out = best[n]
    if out and len(out) > 1:
        return out
    return [piece[:2], piece[2:]] if n == 4 else [piece]


@lru_cache(maxsize=200_000)
def segments(name: str) -> tuple[str, ...]:
    """The word segments of the folded ``name`` (see the module docstring); they join to ``fold(name)``."""
    out: list[str] = []
    for piece in word_pieces(fold(name)):
        out.extend(_split(piece) if len(piece) >= 4 else [piece])
    return tuple(out)


def _in_order(word: Sequence[str], name: Sequence[str]) -> tuple[int, ...] | None:
    """Indexes in ``name`` where each of ``word``'s segments starts, matched in order (a word segment may span
    consecutive name segments), or None."""
    starts: list[int] = []
    j = 0
    for seg in word:
        while j < len(name):
            k, acc = j, ""
            while k < len(name) and len(acc) < len(seg):
                acc += name[k]
                k += 1
            if acc == seg:
                starts.append(j)
                j = k
                break
            j += 1
        else:
            return None
    return tuple(starts)


class SegmentIndex:
    """An inverted index from segment to the names holding it (and from a segment's concatenations of two
    consecutive segments, so a word segment spanning two stored ones is found)."""

    def __init__(self, names: Sequence[str]) -> None:
        self.names = list(names)
        self.segs = [segments(n) for n in self.names]
        self.postings: dict[str, set[int]] = {}
        for i, segs in enumerate(self.segs):
            for k, seg in enumerate(segs):
                self.postings.setdefault(seg, set()).add(i)
                if k + 1 < len(segs):
                    self.postings.setdefault(seg + segs[k + 1], set()).add(i)

    def match(self, word: str, limit: int = 10) -> list[tuple[int, float]]:
        """Names holding the word's segments in order, with something left out (see the module docstring)."""
        wsegs = segments(word)
        if len(wsegs) < MIN_SEGMENTS:
            return []
        lists = sorted((self.postings.get(s, set()) for s in set(wsegs)), key=len)
        if not lists[0]:
            return []
        candidates = set(lists[0]).intersection(*lists[1:])
        wlen = sum(len(s) for s in wsegs)
        out: list[tuple[int, float]] = []
        for i in candidates:
            nsegs = self.segs[i]
            nlen = sum(len(s) for s in nsegs)
            if nlen <= wlen or "".join(wsegs) in "".join(nsegs) or _in_order(wsegs, nsegs) is None:
                continue
            head = nsegs[-1] == wsegs[-1] or "".join(nsegs).endswith(wsegs[-1])
            out.append((i, round(min(wlen / nlen + 0.1 * head, 0.99), 4)))
        out.sort(key=lambda r: (-r[1], len(self.names[r[0]]), r[0]))
        return out[:limit]

"""Names one edit away: a character-bigram index over stored names that finds, for a word, the names within
edit distance 1 of it (one substituted, inserted or deleted character: 红斑狼仓 -> 红斑狼疮).

    NgramIndex(["红斑狼疮", "系统性红斑狼疮"]).one_edit("红斑狼仓")  # [(0, 1)]

Contract:

* Names and words are compared *folded* (:func:`fold`: lower-cased, punctuation and spaces removed), so
  ``库欣综合症`` is one edit from ``库欣综合症`` and ``α-地中海贫血`` equals ``α地中海贫血``.
* Candidates come from the index, never from a scan of every name: one edit destroys at most two of the
  word's distinct bigrams, so a name within one edit shares at least ``distinct bigrams - 2`` of them (and at
  least one); the postings of the word's bigrams are concatenated and counted (numpy), names of a length within
  1 of the word's with enough shared bigrams are verified with an exact edit-distance-1 check.
* Words shorter than :data:`MIN_CHARS` (4) folded characters give nothing (one edit in a short word makes
  another word).
* ``substitution_only``: names of the word's folded length only (one substituted character, the typo case:
  上气道梗阻 is not one substitution from 上、下气道梗阻, which the contains/fuzzy strategies find).
* Results: ``(name index, distance)`` with distance 0 (equal when folded) or 1, equal names first, then by index.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kgrag.text import fold_keyword

__all__ = ["MIN_CHARS", "NgramIndex", "fold", "within_one_edit"]

#: the shortest folded word looked up (one character of three changed is mostly another name: 肋膜炎 / 巩膜炎)
MIN_CHARS = 4
#: ``text`` lower-cased without punctuation or spaces (:func:`kgrag.text.fold_keyword`)
fold = fold_keyword


def _bigrams(text: str) -> set[str]:
    return {text[i:i + 2] for i in range(len(text) - 1)}


def within_one_edit(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` are at most one substitution, insertion or deletion apart."""
    la, lb = len(a), len(b)
    if abs(la - lb) > 1:
        return False
    if la == lb:
        return sum(x != y for x, y in zip(a, b, strict=True)) <= 1
    if la > lb:
        a, b, la, lb = b, a, lb, la
    i = 0
    while i < la and a[i] == b[i]:
        i += 1
    return a[i:] == b[i + 1:]


class NgramIndex:
    """Bigram postings (sorted int32 arrays of name indexes) over folded names."""

    def __init__(self, names: Sequence[str]) -> None:
        self.names = list(names)
        self.folded = [fold(n) for n in self.names]
        self.lengths = np.fromiter((len(f) for f in self.folded), dtype=np.int32, count=len(self.folded))
        postings: dict[str, list[int]] = {}
        for i, f in enumerate(self.folded):
            for gram in _bigrams(f):
                postings.setdefault(gram, []).append(i)
        self.postings = {g: np.asarray(ids, dtype=np.int32) for g, ids in postings.items()}

    def one_edit(self, word: str, limit: int = 10, substitution_only: bool = False) -> list[tuple[int, int]]:
        """Names within one edit of ``word`` (see the module docstring), at most ``limit``; with
        ``substitution_only`` names of the word's length only (one substituted character)."""
        w = fold(word)
        if len(w) < MIN_CHARS:
            return []
        grams = _bigrams(w)
        lists = [self.postings[g] for g in grams if g in self.postings]
        if not lists:
            return []
        ids, counts = np.unique(np.concatenate(lists), return_counts=True)
        need = max(1, len(grams) - 2)
        keep = ids[(counts >= need) & (np.abs(self.lengths[ids] - len(w)) <= (0 if substitution_only else 1))]
        out = [(int(i), 0 if self.folded[i] == w else 1) for i in keep if within_one_edit(w, self.folded[i])]
        out.sort(key=lambda r: (r[1], r[0]))
        return out[:limit]

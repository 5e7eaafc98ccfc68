"""The light word forms the planners match schema words with, where a question's full reading
(:mod:`kgrag.reading.reader`) is not at hand: one noun stemmer with its irregular forms, one suffix stemmer — the
one home for them (the query-graph planners and the network's zero-shot ranker import them from here).

    noun_stem("Cities") == "city"; noun_stem("boxes") == "box"; noun_stem("born") == "birth"
    suffix_stems(["directed", "director", "films"]) == ["direct", "direct", "film"]

Contract: :func:`noun_stem` lower-cases, maps an irregular form (:data:`IRREGULAR`: "people" → "person", "born" →
"birth", "wrote" → "write") and strips one plural ending ("-ies" → "-y", "-es" after s / x / z / ch / sh, "-s" but
not "-ss"), leaving short words whole. :func:`suffix_stems` strips one of :data:`SUFFIXES` from ASCII tokens longer
than four characters (leaving at least three), CJK and short tokens unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["IRREGULAR", "SUFFIXES", "noun_stem", "suffix_stems"]

#: English irregular forms read as the word a schema names them by ("born" → a birth, "people" → persons)
IRREGULAR = {"born": "birth", "died": "death", "dead": "death", "people": "person", "persons": "person",
             "children": "child", "men": "man", "women": "woman", "wrote": "write", "written": "write"}
#: the endings :func:`suffix_stems` strips, longest first
SUFFIXES = ("ations", "ation", "ings", "ing", "ers", "ors", "ies", "ied", "ed", "er", "or", "es", "s")


def noun_stem(word: str) -> str:
    """One word's noun stem (see the module docstring)."""
    word = word.lower()
    if word in IRREGULAR:
        return IRREGULAR[word]
    if word.endswith("ies") and len(word) >= 5:
        return word[:-3] + "y"
    if word.endswith("es") and word[:-2].endswith(("s", "x", "z", "ch", "sh")) and len(word) >= 5:
        return word[:-2]  # "boxes", "churches"; but "languages", "places" only lose their "s"
    if word.endswith("s") and not word.endswith("ss") and len(word) >= 4:
        return word[:-1]
    return word


def suffix_stems(tokens: Iterable[str]) -> list[str]:
    """A light English suffix stemmer (directed / director / directs → direct); Chinese tokens unchanged."""
    out = []
    for tok in tokens:
        if tok.isascii() and len(tok) > 4:
            for suffix in SUFFIXES:
                if tok.endswith(suffix) and len(tok) - len(suffix) >= 3:
                    tok = tok[: -len(suffix)] + ("y" if suffix in ("ies", "ied") else "")
                    break
        out.append(tok)
    return out

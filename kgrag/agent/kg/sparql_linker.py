"""Entity linking by SPARQL, for a KG that lives only on an endpoint (no local vocabulary to scan).

    links, linked = SparqlLinker(client).link("who directed [Blade Runner]")

The question's candidate spans (a ``[bracketed]`` span alone when there is one, else every run of 1-6 words not
made of stopwords only) are looked up in ONE query: each span as written, Title-cased and lower-cased, as a
``"…"@lang`` and a plain literal of the name predicate (``VALUES``: exact matches, served by the store's index).
Where nothing matches and the server has a text index (Virtuoso's ``bif:contains``; tried once, remembered), the
longest spans that neither start nor end with a stopword are looked up through it (one query each, at most 6) and
kept when their normalised name (:func:`kgrag.text.name_key`) equals the span's. The longest span wins; among entities sharing that name, the one with the most types (:meth:`KGClient._most_typed`).
"""

from __future__ import annotations

import re

from kgrag.data.metaqa import TOPIC_SPAN
from kgrag.errors import KgragError
from kgrag.graph.iri import ENTITY_ID_RE
from kgrag.graph.sparql import literal
from kgrag.search.keywords import STOPWORDS
from kgrag.text import name_key
from kgrag.tools.client import KGClient

__all__ = ["SparqlLinker"]

_WORD = re.compile(r"[^\W_]+(?:['’.\-][^\W_]+)*")
MAX_SPAN_WORDS = 6
MAX_SPANS = 120
TEXT_INDEX_SPANS = 6


class SparqlLinker:
    """Topic links of a question over a KG client's name predicate (see the module docstring)."""

    def __init__(self, client: KGClient) -> None:
        self.client = client
        self.text_index: bool | None = None  # unknown until tried

    def _spans(self, question: str) -> list[tuple[int, int]]:
        brackets = [(m.start(1), m.end(1)) for m in TOPIC_SPAN.finditer(question)]
        if brackets:
            return brackets
        words = list(_WORD.finditer(question))
        spans = []
        for i in range(len(words)):
            for j in range(i, min(i + MAX_SPAN_WORDS, len(words))):
                chunk = [w.group().lower() for w in words[i:j + 1]]
                if all(w in STOPWORDS for w in chunk):
                    continue
                spans.append((words[i].start(), words[j].end()))
        spans.sort(key=lambda s: (-(s[1] - s[0]), s[0]))
        return spans[:MAX_SPANS]

    @staticmethod
    def _content_spans(question: str, spans: list[tuple[int, int]]) -> list[str]:
        """The spans that neither start nor end with a stopword, longest first, each once."""
        out: list[str] = []
        for start, end in spans:
            words = [w.group().lower() for w in _WORD.finditer(question[start:end])]
            span = question[start:end]
            if words and words[0] not in STOPWORDS and words[-1] not in STOPWORDS and span not in out:
                out.append(span)
        return out

    def _exact(self, texts: dict[str, str]) -> dict[str, list[str]]:
        """{looked-up text: entity ids} for the texts (value → the span text it came from)."""
        client = self.client
        values = " ".join(f"{literal(t, lang=client.lang)} {literal(t)}" for t in texts)
        query = (f"SELECT DISTINCT ?e ?n WHERE {{ VALUES ?n {{ {values} }} ?e {client._name} ?n . FILTER(isIRI(?e)) }} "
                 "LIMIT 1000")
        found: dict[str, list[str]] = {}
        for row in client._select(query):
            entity = client._local(row["e"])
            if ENTITY_ID_RE.match(entity):
                found.setdefault(row["n"].value, []).append(entity)
        return found

    def _text_index(self, span: str) -> list[tuple[str, str]]:
        """(entity id, name) of names holding every word of ``span``, by the server's text index."""
        words = [w for w in re.findall(r"[A-Za-z0-9]+", span) if len(w) > 1]
        if not words or self.text_index is False:
            return []
        expression = " AND ".join(f"'{w}'" for w in words[:6])
        query = (f"SELECT DISTINCT ?e ?n WHERE {{ ?e {self.client._name} ?n . ?n bif:contains {literal(expression)} . "
                 "FILTER(isIRI(?e)) } LIMIT 50")
        try:
            rows = self.client._select(query)
        except KgragError:
            self.text_index = False  # not Virtuoso (or no text index): exact look-ups only
            return []
        self.text_index = True
        return [(self.client._local(r["e"]), r["n"].value) for r in rows]

    def link(self, question: str) -> tuple[list[tuple[str, str, str, str]], str]:
        """``[(span text, stored name, entity id, match type)]`` (best first) and the question with the best span
        in [brackets]; ``([], question)`` when nothing links."""
        spans = self._spans(question)
        if not spans:
            return [], question
        bracketed = bool(TOPIC_SPAN.search(question))
        texts: dict[str, str] = {}
        for start, end in spans:
            span = question[start:end]
            for variant in (span, span.title(), span.lower()):
                texts.setdefault(variant, span)
        found = self._exact(texts)
        links: list[tuple[str, str, str, str]] = []
        for start, end in spans:  # longest first
            span = question[start:end]
            for variant in dict.fromkeys((span, span.title(), span.lower())):
                ids = found.get(variant)
                if ids:
                    entity = ids[0] if len(set(ids)) == 1 else self.client._most_typed(sorted(set(ids)))
                    kind = "bracket" if bracketed else ("exact" if variant == span else "normalised")
                    links.append((span, variant, entity, kind))
                    break
        if not links:
            for span in self._content_spans(question, spans)[:TEXT_INDEX_SPANS]:
                matches = [(e, n) for e, n in self._text_index(span) if name_key(n) == name_key(span)
                           and ENTITY_ID_RE.match(e)]
                if matches:
                    links.append((span, matches[0][1], matches[0][0], "text index"))
                    break
        links = list({link[2]: link for link in links}.values())[:5]
        if not links:
            return [], question
        best = links[0][0]
        linked = question if bracketed else question.replace(best, f"[{best}]", 1)
        return links, linked

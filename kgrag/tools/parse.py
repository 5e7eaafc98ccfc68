"""Parse what an agent writes inside ``<kg-query>…</kg-query>`` (spec kg-tools.md, the specification of the
KG tools for LLM agents, §1).

Two call shapes are accepted, with single or double quotes and free whitespace::

    get_relations("entity")
    get_triples("entity", ["rel1", "rel2", ...])

Anything else is a :class:`ParseError` whose text is the spec's ``[Could not parse query: ...]``.
Parsing never raises on any input string.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TAG = re.compile(r"<kg-query>((?:(?!<kg-query>).)*?)</kg-query>", re.DOTALL)
_GET_RELATIONS = re.compile(r"get_relations\s*\(\s*([\"'])(.*?)\1\s*\)", re.DOTALL)
_GET_TRIPLES = re.compile(r"get_triples\s*\(\s*([\"'])(.*?)\1\s*,\s*\[(.*?)\]\s*\)", re.DOTALL)


@dataclass(frozen=True)
class GetRelations:
    entity: str


@dataclass(frozen=True)
class GetTriples:
    entity: str
    relations: tuple[str, ...]  # de-duplicated, in order (not yet truncated)


@dataclass(frozen=True)
class ParseError:
    query: str

    @property
    def message(self) -> str:
        return f"[Could not parse query: {self.query}]"


Query = GetRelations | GetTriples | ParseError


def extract_query(text: str) -> str:
    """The content of the first ``<kg-query>`` tag, or the whole text (stripped) when there is no tag."""
    match = _TAG.search(text)
    return (match.group(1) if match else text).strip()


_QUOTED = r"\s*(?:\"[^\"]*\"|'[^']*')\s*"
_LIST = re.compile(rf"(?:{_QUOTED}(?:,{_QUOTED})*,?)?\s*")
_ITEM = re.compile(r"\"([^\"]*)\"|'([^']*)'")


def _relation_list(body: str) -> tuple[str, ...] | None:
    """The quoted strings of a list body, de-duplicated in order; None when the body is not such a list."""
    if not _LIST.fullmatch(body):
        return None
    out: list[str] = []
    for double, single in _ITEM.findall(body):
        rel = double or single
        if rel not in out:
            out.append(rel)
    return tuple(out)


def parse_query(text: str) -> Query:
    """Parse one query (bare or wrapped in ``<kg-query>``)."""
    query = extract_query(text)
    match = _GET_RELATIONS.fullmatch(query)
    if match:
        return GetRelations(entity=match.group(2).strip())
    match = _GET_TRIPLES.fullmatch(query)
    if match:
        relations = _relation_list(match.group(3))
        if relations is not None:
            return GetTriples(entity=match.group(2).strip(), relations=relations)
    return ParseError(query=query)

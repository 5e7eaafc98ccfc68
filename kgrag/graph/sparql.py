"""Safe SPARQL building blocks: validated identifiers and escaped literals, never pasted user strings."""

from __future__ import annotations

from kgrag.graph.iri import ENTITY_ID_RE, RELATION_RE

_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}
_LANG_OK = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-")


def escape_string(value: str) -> str:
    """Escape a string for a double-quoted SPARQL/N-Triples literal (ECHAR rules; other controls as \\uXXXX)."""
    out = []
    for ch in value:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ord(ch) < 0x20 or ch in "\u2028\u2029":
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    return "".join(out)


def literal(value: str, lang: str | None = None, datatype: str | None = None) -> str:
    """A SPARQL literal: ``"escaped"@lang`` or ``"escaped"^^<datatype>``."""
    text = f'"{escape_string(value)}"'
    if lang:
        if not set(lang) <= _LANG_OK:
            raise ValueError(f"invalid language tag {lang!r}")
        return f"{text}@{lang}"
    if datatype:
        return f"{text}^^{iri(datatype)}"
    return text


def iri(value: str) -> str:
    """``<value>`` after checking it holds no character that would end or break an IRIREF."""
    if any(c in value for c in '<>"{}|^`\\ \n\r\t') or not value:
        raise ValueError(f"invalid IRI {value!r}")
    return f"<{value}>"


def entity_term(base: str, entity_id: str) -> str:
    """``<base + id>`` for a validated entity id (raises ValueError otherwise)."""
    if not ENTITY_ID_RE.match(entity_id):
        raise ValueError(f"invalid entity id {entity_id!r}")
    return iri(base + entity_id)


def relation_term(base: str, relation: str) -> str:
    """``<base + relation>`` for a validated relation name (raises ValueError otherwise)."""
    if not RELATION_RE.match(relation):
        raise ValueError(f"invalid relation {relation!r}")
    return iri(base + relation)

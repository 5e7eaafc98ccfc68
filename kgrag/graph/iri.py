"""IRI conventions and strict identifier patterns.

Every dataset lives in one namespace ``ns`` (its ``KGDataset.iri_base``); entities, relations and the name
predicate are all local names under it, as in Freebase:

- Freebase / the demo KG: ``http://rdf.freebase.com/ns/<mid>`` (``m.0abc``, ``g.11x…``), relations such as
  ``people.person.place_of_birth``, names via ``ns:type.object.name "…"@en``.
- MetaQA: ``http://example.org/kgrag/metaqa/ns/e.<slug>_<hash8>`` where ``slug`` is the ASCII-folded,
  lower-cased name (≤ 48 chars of ``[a-z0-9_]``) and ``hash8`` the first 8 hex digits of SHA-1(name): stable
  (depends on the name only), URL-safe and unique. The nine relations keep their names (``ns:directed_by``);
  names via ``ns:type.object.name "…"@en``; year / rating entities also carry ``ns:kgrag.value`` as a typed
  literal (``xsd:gYear``, ``xsd:decimal``).
- Medical: ``http://example.org/kgrag/medical/ns/e.<slug>_<hash8>`` (slug empty for Chinese names, so
  ``e._<hash8>``), names ``@zh``.

Identifiers reaching a SPARQL query must match :data:`ENTITY_ID_RE` / :data:`RELATION_RE` as a whole string
(no trailing newline); literals go through
:func:`kgrag.graph.sparql.literal`.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

FREEBASE_NS = "http://rdf.freebase.com/ns/"
XSD = "http://www.w3.org/2001/XMLSchema#"
NAME_PREDICATE = "type.object.name"
VALUE_PREDICATE = "kgrag.value"

#: Local entity ids: Freebase MIDs/GUIDs (``m.0abc``, ``g.11b6…``), Freebase keys (``en.foo``) and slug ids (``e.x_1a2b3c4d``).
ENTITY_ID_RE = re.compile(r"^(?:[mg]\.[0-9a-z_]{1,64}|en\.[0-9a-z_]{1,128}|e\.[0-9a-z_]{0,48}_[0-9a-f]{8})\Z")
#: Relation local names: dotted/underscored identifiers (``people.person.spouse_s``, ``directed_by``).
RELATION_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+){0,8}\Z")

_SLUG_STRIP = re.compile(r"[^a-z0-9]+")


def slug_id(key: str, text: str | None = None) -> str:
    """Stable, URL-safe local id for an entity key (depends on ``key`` only): ``e.<slug of text>_<sha1(key)[:8]>``,
    the slug of the key itself unless another ``text`` names it."""
    ascii_name = unicodedata.normalize("NFKD", key if text is None else text).encode("ascii", "ignore")
    slug = _SLUG_STRIP.sub("_", ascii_name.decode("ascii").lower()).strip("_")[:48].rstrip("_")
    digest = hashlib.sha1(key.encode("utf-8")).hexdigest()[:8]
    return f"e.{slug}_{digest}"


def iri_local_id(key: str) -> str:
    """The local id of an imported node whose key is an IRI (or a blank node, a literal): the IRI's last segment
    when it already is an id (``…/ns/m.0abc`` → ``m.0abc``), else a slug of that segment with the hash of the whole
    key (``…/Douglas_Adams`` → ``e.douglas_adams_1a2b3c4d``)."""
    if key.startswith('"'):  # a literal node: its lexical value
        tail = key[1:key.rindex('"')] if key.count('"') >= 2 else key
    else:
        tail = re.split(r"[/#]", key)[-1] if "://" in key or key.startswith("urn:") else key
    return tail if ENTITY_ID_RE.match(tail) else slug_id(key, tail)


def local_id(key: str, id_style: str) -> str:
    """The IRI local id of an entity key under a dataset's ``id_style`` (``"key"``, ``"slug"`` or ``"iri"``)."""
    if id_style == "slug":
        return slug_id(key)
    if id_style == "iri":
        return iri_local_id(key)
    if id_style == "key":
        if not ENTITY_ID_RE.match(key):
            raise ValueError(f"entity key {key!r} is not a valid id (expected e.g. m.0abc, g.11x, en.foo)")
        return key
    raise ValueError(f"unknown id_style {id_style!r} (expected 'key', 'slug' or 'iri')")


def is_entity_id(value: str) -> bool:
    return bool(ENTITY_ID_RE.match(value))


def is_relation(value: str) -> bool:
    return bool(RELATION_RE.match(value))


def to_local(iri: str, base: str) -> str:
    """``http://rdf.freebase.com/ns/people.person.children`` → ``people.person.children`` (IRI kept if foreign)."""
    return iri[len(base):] if iri.startswith(base) else iri

"""Read a user's own triple files — N-Triples, N-Quads, Turtle (also TriG, N3, RDF/XML, JSON-LD; plain, ``.gz`` or
``.bz2``) and ``head relation tail`` lines separated by tabs or ``|`` (MetaQA's ``kb.txt``) — as a stream into
integer triple arrays.

    graph = read_triple_files(["kg.nt.gz"], lang="en")   # TripleArrays: keys, names, relations, head/rel/tail

RDF is parsed by pyoxigraph one statement at a time; a triple becomes three ints appended to typed arrays, so only
the vocabularies (one string per node and relation) are Python objects, never the triples. Conventions:

- a node's key is its IRI (``_:file:label`` for a blank node); a literal object is a node too, keyed by its
  N-Triples form (``"1961"^^xsd:gYear``), named by its value, its XSD type kept (so values stay literals in the
  store); equal literals are one node. A TSV field is its own key and name; numeric tails get an XSD type.
- names: ``type.object.name`` (Freebase's, or under any namespace: kgrag's own exports), ``rdfs:label``, ``skos:prefLabel``, ``schema:name`` — the configured
  language first, then untagged, then any other; a name triple is a name, not an edge. A node without a name is a
  mediator (CVT) node; the KG tools flatten it. Where the graph gives no label, an IRI's readable last segment is
  the name (``…/Douglas_Adams`` → ``Douglas Adams``; never an opaque id such as ``m.0abc`` or ``Q42``): for the
  classes (objects of ``rdf:type`` / ``type.object.type``) always, for every node when the graph has no name
  triple at all.
- a relation is kept as the source names it (its IRI, or the TSV text); :mod:`kgrag.graph.imported` mints its
  local name. N-Quads' graph names are ignored (all graphs merge).
- properties (Wikidata style: opaque ids, labels on the properties too): a name triple whose subject is a predicate
  used in the graph names that relation (``relation_labels``), never an entity — whether it comes before or after
  the predicate's use. ``wikibase:directClaim`` maps a property entity to its predicate (``wd:P19
  wikibase:directClaim wdt:P19``: the label of ``wd:P19`` names ``wdt:P19``); without it, a labelled node that is
  no edge's object and whose opaque local id is that of one used predicate (``wd:P19`` / ``wdt:P19``) names it. Every
  triple whose subject is such a property node (its ``rdf:type``, datatype, …) is schema, not an edge
  (``property_triples`` counts them); a node only those triples reached is dropped. ``wikibase:claim`` / ``ps:`` /
  ``pq:`` (statement nodes) are imported as plain edges through unnamed statement nodes, with no special meaning.
- other names: ``skos:altLabel``, ``schema:alternateName``, Freebase's ``common.topic.alias`` (any namespace) and
  the ``alias_predicates`` the caller names are other names of their subject (``aliases``: node → names), not
  edges; so is a same-language name that lost to a better-ranked one (``rdfs:label "Einstein"`` beside
  ``schema:name "Albert Einstein"``). Only names in the configured language (or untagged) are kept.
- a malformed statement or line is reported with its file and line and skipped; past ``max_bad_lines`` the import
  stops with an error, and with ``strict=True`` at the first one (``kgrag prepare --strict``). A missing file, an
  unknown format or no triple at all is a one-line error.
- what a malformed statement costs (``bad_lines`` counts the parser's errors, ``unread_lines`` the lines never
  parsed): a TSV, N-Triples or N-Quads line is skipped alone. In Turtle / TriG / N3 pyoxigraph's parser drops input
  up to the end of the statement the error is in (the next ``.``; measured: often the following statement too) and
  resumes. It cannot get past an unterminated string, long string or IRI: that swallows the rest of the file and
  ends in "Unexpected end of file"; the reader then parses again from the line after the error's line, with the
  prefixes and base declared so far (each file's ``resumed_after`` lists those lines). A statement whose string
  ran on over the following lines (a bogus literal of the recovery) is not imported, and is listed at the error's
  line. Only when that makes no progress (or after 20 resumes) are the lines after it lost:
  ``unread_lines``, with the file's ``unread_after``. Two unterminated short strings cancel out: between them the
  parser reads with its quotes inverted and reaches the end of the file in step; what it drops there is reported
  as errors but not parsed again (``bench/loud_import.py --breaks 3``: 22 % of the names lost). RDF/XML and
  JSON-LD errors carry no line (reported as line 0) and may end the file's parse.
"""

from __future__ import annotations

import bz2
import gzip
import io
import re
import urllib.parse
from array import array
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import numpy as np
import pyoxigraph as ox

from kgrag.data.freebase import FREEBASE_NS
from kgrag.data.records import LineIssue
from kgrag.errors import KgragError

__all__ = ["ALIAS_PREDICATES", "DIRECT_CLAIM", "NAME_PREDICATES", "TripleArrays", "detect_format",
           "read_triple_files"]

XSD = "http://www.w3.org/2001/XMLSchema#"
#: name predicates, most preferred first (the rank breaks ties between names of the same language rank)
NAME_PREDICATES: tuple[str, ...] = (
    f"{FREEBASE_NS}type.object.name",
    "http://www.w3.org/2004/02/skos/core#prefLabel",
    "http://schema.org/name",
    "https://schema.org/name",
    "http://www.w3.org/2000/01/rdf-schema#label",
)
#: other-name predicates read by default (Freebase's ``common.topic.alias`` is matched under any namespace)
ALIAS_PREDICATES: tuple[str, ...] = (
    "http://www.w3.org/2004/02/skos/core#altLabel",
    "http://schema.org/alternateName",
    "https://schema.org/alternateName",
    f"{FREEBASE_NS}common.topic.alias",
)
#: Wikidata's property entity → direct-claim predicate mapping
DIRECT_CLAIM = "http://wikiba.se/ontology#directClaim"
_OWN_ALIAS = "/common.topic.alias"
_ALIAS_LANG_RANK = 2  # an other name is kept in the configured language, untagged, or a variant of it
_RDF_FORMATS = {".nt": ox.RdfFormat.N_TRIPLES, ".ntriples": ox.RdfFormat.N_TRIPLES, ".nq": ox.RdfFormat.N_QUADS,
                ".ttl": ox.RdfFormat.TURTLE, ".turtle": ox.RdfFormat.TURTLE, ".trig": ox.RdfFormat.TRIG,
                ".n3": ox.RdfFormat.N3, ".rdf": ox.RdfFormat.RDF_XML, ".owl": ox.RdfFormat.RDF_XML,
                ".jsonld": ox.RdfFormat.JSON_LD}
_LINE_SUFFIXES = (".tsv", ".txt", ".psv")
_YEAR = re.compile(r"^\d{4}$")
_INT = re.compile(r"^[+-]?\d+$")
_DECIMAL = re.compile(r"^[+-]?(\d+\.\d*|\.\d+)$")
_XSD_PLAIN = {"string", "langString"}
_OWN_NAME = "/type.object.name"
_TYPE_PREDICATES = frozenset({"http://www.w3.org/1999/02/22-rdf-syntax-ns#type", f"{FREEBASE_NS}type.object.type"})
#: a local name that is an opaque id (Freebase m./g. ids, Wikidata Q/P ids, hashes): not a label
_OPAQUE = re.compile(r"^(?:[mg]\.[0-9a-z_]+|[A-Z]\d+|[0-9a-f-]{16,}|\d+)$")
_OWN_VALUE = "/kgrag.value"


@dataclass
class TripleArrays:
    """Vocabularies in first-seen order and int32 triples over them (duplicates not yet dropped)."""

    keys: list[str]
    names: list[str]  # "" for unnamed nodes
    relations: list[str]  # each relation as the source names it (a predicate IRI, or the TSV text)
    head: np.ndarray
    rel: np.ndarray
    tail: np.ndarray
    literal_types: dict[str, str]  # key -> XSD local type
    id_style: str  # "iri" (RDF sources) or "slug" (TSV sources: keys are names)
    issues: list[LineIssue] = field(default_factory=list)
    bad_lines: int = 0
    name_triples: int = 0
    files: list[dict] = field(default_factory=list)  # per file: path, format, triples, bad lines
    relation_labels: list[str] = field(default_factory=list)  # per relation, its property's label ("" for none)
    alias_nodes: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))  # node of each other name
    alias_names: list[str] = field(default_factory=list)  # the other names, sorted by node, no repeats
    property_triples: int = 0  # triples about a property (its label, type, …): schema, not edges
    unread_lines: int = 0  # lines the parser never read: after an error it could not resume from (see the docstring)


def detect_format(path: Path) -> str:
    """The RDF suffix (``nt``, ``nq``, ``ttl``, ``trig``, ``n3``, ``rdf``, ``owl``, ``jsonld``, …) or ``lines``, from
    the name (``.gz`` / ``.bz2`` looked through)."""
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] in (".gz", ".bz2"):
        suffixes = suffixes[:-1]
    last = suffixes[-1] if suffixes else ""
    if last in _RDF_FORMATS:
        return last[1:]
    if last in _LINE_SUFFIXES:
        return "lines"
    raise KgragError(f"unknown format of {path}: expected .nt, .nq, .ttl, .trig, .n3, .rdf/.owl, .jsonld (RDF) or "
                     ".tsv / .txt (head relation tail lines), each optionally .gz or .bz2")


class _CountedFile(io.RawIOBase):
    """A file read through, telling ``on_bytes(bytes read so far)`` as it goes (of the file on disk: a gzipped
    file's compressed bytes), at most once per :data:`_COUNT_STEP` bytes."""

    def __init__(self, path: Path, on_bytes: Callable[[int], None]) -> None:
        self._fh = open(path, "rb")  # noqa: SIM115 - closed by close()
        self._on_bytes, self._read, self._told = on_bytes, 0, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        n = self._fh.readinto(buffer)
        self._read += n or 0
        if self._read - self._told >= _COUNT_STEP:
            self._told = self._read
            self._on_bytes(self._read)
        return n

    def close(self) -> None:
        self._fh.close()
        super().close()


_COUNT_STEP = 1 << 20


class _CountedBZ2(bz2.BZ2File):
    """A bz2 stream over a counted file, closing that file with itself (BZ2File leaves a given file open)."""

    def __init__(self, raw: IO[bytes]) -> None:
        super().__init__(raw, "rb")
        self._counted = raw

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._counted.close()


def _open(path: Path, on_bytes: Callable[[int], None] | None = None) -> IO[bytes]:
    name = path.name.lower()
    if on_bytes is None:
        if name.endswith(".gz"):
            return gzip.open(path, "rb")
        if name.endswith(".bz2"):
            return bz2.open(path, "rb")
        return open(path, "rb")  # noqa: SIM115 - the caller's with closes it
    raw = io.BufferedReader(_CountedFile(path, on_bytes), 1 << 16)
    if name.endswith(".gz"):
        stream = gzip.GzipFile(fileobj=raw, mode="rb")
        stream.myfileobj = raw  # closed with the stream (GzipFile closes what it opened only)
        return stream
    if name.endswith(".bz2"):
        return _CountedBZ2(raw)
    return raw


def iri_label(key: str) -> str:
    """A readable name from an IRI's last segment (``…/Douglas_Adams`` → ``Douglas Adams``); "" for a blank node,
    a literal or an opaque id (``m.0abc``, ``Q42``, a hash), which stay unnamed (mediator nodes)."""
    if not ("://" in key or key.startswith("urn:")):
        return ""
    tail = urllib.parse.unquote(re.split(r"[/#:]", key.rstrip("/#"))[-1])
    if not tail or _OPAQUE.match(tail):
        return ""
    return " ".join(tail.replace("_", " ").split())


class _Builder:
    """Interns nodes and relations and appends int triples (see :class:`TripleArrays`)."""

    def __init__(self, lang: str, max_bad_lines: int, alias_predicates: Sequence[str] = (),
                 strict: bool = False) -> None:
        self.lang = lang.lower()
        self.strict = strict
        self.alias_predicates = frozenset((*ALIAS_PREDICATES, *alias_predicates))
        self.alias_node = array("i")  # other names: node, text (see the module docstring)
        self.alias_text: list[str] = []
        self.direct_claims: dict[str, str] = {}  # direct-claim predicate IRI -> its property entity's IRI
        self.property_triples = 0
        self.max_bad = max_bad_lines
        self.nodes: dict[str, int] = {}
        self.names: list[str] = []  # per node, "" until named
        self.ranks = bytearray()  # per node, 1 + the rank of its name's source (255: none yet)
        self.rels: dict[str, int] = {}  # source relation -> id
        self.h, self.r, self.t = array("i"), array("i"), array("i")
        self.literal_types: dict[str, str] = {}
        self.issues: list[LineIssue] = []
        self.bad = 0
        self.name_triples = 0
        self.name_rank = {p: i for i, p in enumerate(NAME_PREDICATES)}
        self.classes: set[int] = set()  # objects of rdf:type / type.object.type

    def node(self, key: str) -> int:
        nodes = self.nodes
        i = nodes.get(key)
        if i is None:
            i = nodes[key] = len(nodes)
            self.names.append("")
            self.ranks.append(255)
        return i

    def relation(self, source: str) -> int:
        rels = self.rels
        i = rels.get(source)
        if i is None:
            i = rels[source] = len(rels)
        return i

    def name(self, node: int, rank: int, text: str) -> None:
        """Keep ``text`` as the node's name when its source ranks better (lower; from -1) than the current one."""
        if rank + 1 < self.ranks[node]:
            self.ranks[node] = rank + 1
            self.names[node] = text

    def name_or_alias(self, node: int, rank: int, text: str) -> None:
        """A name triple's name (``rank``: 10 × language rank + predicate rank): the node's name when it ranks
        better, and the name it displaced — or itself, when it loses — an other name when in the language."""
        current, current_rank = self.names[node], self.ranks[node] - 1
        if rank < current_rank:
            self.ranks[node] = rank + 1
            self.names[node] = text
            if current and current != text and 0 <= current_rank < 10 * (_ALIAS_LANG_RANK + 1):
                self.alias(node, current)
        elif text != current and rank < 10 * (_ALIAS_LANG_RANK + 1):
            self.alias(node, text)

    def alias(self, node: int, text: str) -> None:
        if text.strip():
            self.alias_node.append(node)
            self.alias_text.append(text)

    def add(self, head: int, rel: int, tail: int) -> None:
        self.h.append(head)
        self.r.append(rel)
        self.t.append(tail)

    def bad_line(self, path: str, line: int, reason: str) -> None:
        self.bad += 1
        if len(self.issues) < 1000:
            self.issues.append(LineIssue(path, line, reason))
        if self.strict:
            raise KgragError(f"{path}:{line}: {reason} (--strict: the import stops at the first malformed statement)")
        if self.bad > self.max_bad:
            raise KgragError(f"{path}:{line}: {reason} — more than {self.max_bad} malformed lines, the import stops "
                             f"(first: {self.issues[0]}); fix the file or raise --max-bad-lines")

    def lang_rank(self, language: str | None) -> int:
        if not language:
            return 1
        language = language.lower()
        if language == self.lang:
            return 0
        return 2 if language.split("-")[0] == self.lang else 3

    def property_nodes(self) -> dict[int, int]:
        """{node: relation} for each node that names a used predicate (see the module docstring): the predicate's
        own IRI, its ``wikibase:directClaim`` property entity, else a labelled node that is no edge's object and
        has the same opaque local id. The predicate's own node comes first, so its label wins."""
        nodes, rels = self.nodes, self.rels
        out: dict[int, int] = {}
        for source, rel in rels.items():
            node = nodes.get(source)
            if node is not None:
                out[node] = rel
        for predicate, entity in self.direct_claims.items():
            rel, node = rels.get(predicate), nodes.get(entity)
            if rel is not None and node is not None:
                out.setdefault(node, rel)
        labelled = {rel for node, rel in out.items() if self.names[node]}
        by_local: dict[str, list[int]] = {}
        for source, rel in rels.items():
            local = _opaque_local(source)
            if local and rel not in labelled:
                by_local.setdefault(local, []).append(rel)
        if by_local:
            is_tail = np.zeros(len(self.names), dtype=bool)
            is_tail[np.frombuffer(self.t, dtype=np.int32)] = True
            for key, node in nodes.items():
                if self.names[node] and not is_tail[node] and node not in out:
                    candidates = by_local.get(_opaque_local(key) or "")
                    if candidates and len(candidates) == 1:
                        out[node] = candidates[0]
        return out

    def relation_labels(self, properties: dict[int, int]) -> list[str]:
        labels = [""] * len(self.rels)
        for node, rel in properties.items():  # the predicate's own node first (see property_nodes)
            if not labels[rel] and self.names[node]:
                labels[rel] = self.names[node]
        return labels

    def drop_property_nodes(self, properties: dict[int, int], keys: list[str]) -> tuple[list[str], np.ndarray,
                                                                                       np.ndarray, np.ndarray]:
        """The keys and triples without the property nodes: every triple whose subject is one is schema
        (counted), and a node left in no edge by that (the property itself, its type) is dropped."""
        h, r, t = (np.frombuffer(a, dtype=np.int32) for a in (self.h, self.r, self.t))
        if not properties:
            return keys, h, r, t
        n = len(keys)
        is_property = np.zeros(n, dtype=bool)
        is_property[np.fromiter(properties, dtype=np.int64, count=len(properties))] = True
        schema = is_property[h]
        self.property_triples += int(schema.sum())
        before = np.bincount(h, minlength=n) + np.bincount(t, minlength=n)
        h, r, t = h[~schema], r[~schema], t[~schema]
        after = np.bincount(h, minlength=n) + np.bincount(t, minlength=n)
        drop = (after == 0) & (is_property | (before > 0))
        if not drop.any():
            return keys, h, r, t
        keep = ~drop
        remap = np.cumsum(keep, dtype=np.int64) - 1
        kept = np.flatnonzero(keep).tolist()
        self.names = [self.names[i] for i in kept]
        self.classes = {int(remap[c]) for c in self.classes if keep[c]}
        alias_node = np.frombuffer(self.alias_node, dtype=np.int32)
        alias_kept = keep[alias_node]
        self.alias_text = [a for a, k in zip(self.alias_text, alias_kept.tolist(), strict=True) if k]
        self.alias_node = array("i", remap[alias_node[alias_kept]].astype(np.int32).tobytes())
        for i in np.flatnonzero(drop).tolist():
            self.literal_types.pop(keys[i], None)
        return ([keys[i] for i in kept], remap[h].astype(np.int32), r, remap[t].astype(np.int32))

    def other_names(self) -> tuple[np.ndarray, list[str]]:
        """The other names sorted by node, each (node, name) once, none equal to the node's own name."""
        nodes = np.frombuffer(self.alias_node, dtype=np.int32)
        if not nodes.size:
            return np.zeros(0, dtype=np.int32), []
        names, texts = self.names, self.alias_text
        seen: set[tuple[int, str]] = set()
        rows: list[int] = []
        out: list[str] = []
        for i in np.argsort(nodes, kind="stable").tolist():
            node, text = int(nodes[i]), texts[i]
            if text == names[node] or (node, text) in seen:
                continue
            seen.add((node, text))
            rows.append(node)
            out.append(text)
        return np.asarray(rows, dtype=np.int32), out

    def arrays(self, id_style: str, files: list[dict]) -> TripleArrays:
        properties = self.property_nodes() if id_style == "iri" else {}
        labels = self.relation_labels(properties)
        keys, h, r, t = self.drop_property_nodes(properties, list(self.nodes))
        self.nodes = {}  # the keys live on in the list; the dict's table is freed now
        names = self.names
        if id_style == "iri":  # IRI local names where the graph gives no label (see the module docstring)
            label_all = self.name_triples == 0
            for node in (range(len(keys)) if label_all else sorted(self.classes)):
                if not names[node]:
                    names[node] = iri_label(keys[node])
        alias_nodes, alias_names = self.other_names()
        relations = list(self.rels)
        if properties:  # relations only schema triples used (wikibase:propertyType, rdf:type of a property) go
            used = np.zeros(len(relations), dtype=bool)
            used[r] = True
            if not used.all():
                remap = np.cumsum(used, dtype=np.int64) - 1
                relations = [rel for rel, u in zip(relations, used.tolist(), strict=True) if u]
                labels = [label for label, u in zip(labels, used.tolist(), strict=True) if u]
                r = remap[r].astype(np.int32)
        return TripleArrays(
            keys=keys, names=names, relations=relations, head=h, rel=r, tail=t,
            literal_types=self.literal_types, id_style=id_style,
            issues=self.issues, bad_lines=self.bad, name_triples=self.name_triples, files=files,
            relation_labels=labels, alias_nodes=alias_nodes, alias_names=alias_names,
            property_triples=self.property_triples, unread_lines=sum(f.get("unread_lines", 0) for f in files))


def _opaque_local(iri: str) -> str:
    """An IRI's last segment when it is an opaque id (``P19`` of ``wd:P19`` and ``wdt:P19``); else ""."""
    if not ("://" in iri or iri.startswith("urn:")):
        return ""
    tail = re.split(r"[/#:]", iri.rstrip("/#"))[-1]
    return tail if tail and _OPAQUE.match(tail) else ""


def _literal_key(term: ox.Literal, builder: _Builder) -> str:
    value = term.value
    if term.language:
        return f'"{value}"@{term.language}'
    datatype = term.datatype.value
    local = datatype[len(XSD):] if datatype.startswith(XSD) else ""
    if local in _XSD_PLAIN:
        return f'"{value}"'
    key = f'"{value}"^^<{datatype}>'
    if local and key not in builder.literal_types:
        builder.literal_types[key] = local
    return key


class _Headed:
    """A binary reader that reads ``header`` (the prefixes of a resumed parse) before the file."""

    def __init__(self, fh: IO[bytes], header: bytes) -> None:
        self.fh = fh
        self.header = header

    def read(self, size: int = -1) -> bytes:
        if self.header:
            chunk, self.header = self.header, b""
            return chunk
        return self.fh.read(size)


def _line_count(path: Path) -> int:
    """The file's lines (a last line without a newline included); read again only after a runaway error."""
    lines, last = 0, b"\n"
    with _open(path) as fh:
        while chunk := fh.read(1 << 20):
            lines += chunk.count(b"\n")
            last = chunk[-1:]
    return lines + (last != b"\n")


_RUNAWAY = "Unexpected end"  # pyoxigraph's message when an error ran to the end of the file
_PREFIXED = frozenset({"ttl", "turtle", "trig", "n3"})  # formats whose prefixes a resumed parse must be given
_MAX_RESUMES = 20  # per file: each costs a re-read of the file up to the resume line
_PARSER_ERROR = re.compile(
    r"^Parser error (?:at line \d+ |between line \d+ )?(?:between columns?|columns?) (\d+)[^:]*: ")


def _reason(message: str, column: int | None = None) -> str:
    """pyoxigraph's message without what ``file:line`` already says: ``Parser error at line 25 between columns 23
    and 28: A dot is expected … (line 25)`` → ``A dot is expected … (column 23)``; ``column`` replaces the parser's
    (see :class:`_Lines`)."""
    message = message.split(" (line")[0]
    match = _PARSER_ERROR.match(message)
    return f"{message[match.end():]} (column {column or match[1]})" if match else message


class _Lines:
    """Where a parser error really is. After a token that spanned lines (a string opened by an unterminated quote),
    pyoxigraph reports the line the token began on and counts the column on from there across the line breaks
    (``at line 4 … column 61`` for column 2 of line 6); :meth:`physical` turns that into the file's line and
    column. One per file, across its resumed parses: the file's line lengths are read once, on the first error,
    only as far as the errors reach; its line count (:meth:`count`) once, on the first runaway error."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lengths: list[int] = []  # characters of each line read so far, its line break included
        self._fh: IO[bytes] | None = None
        self._ended = False  # every line's length is read
        self._count: int | None = None

    def _length(self, line: int) -> int | None:
        while len(self.lengths) < line:
            if self._ended:
                return None
            if self._fh is None:
                self._fh = _open(self.path)
            raw = self._fh.readline()
            if not raw:
                self._ended = True
                self.close()
                return None
            self.lengths.append(len(raw.decode("utf-8", errors="replace")))
        return self.lengths[line - 1]

    def physical(self, line: int, column: int) -> tuple[int, int]:
        """``(line, column)`` (1-based, the parser's) → the file's ``(line, column)``."""
        at = column - 1
        while (length := self._length(line)) is not None and at >= length:
            at -= length
            line += 1
        return line, at + 1

    def count(self) -> int:
        """The file's lines (:func:`_line_count`, read once)."""
        if self._count is None:
            self._count = _line_count(self.path)
        return self._count

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


def _statements(parser: Iterator[ox.Quad], lines: _Lines, builder: _Builder, offset: int,
                report: dict) -> Iterator[ox.Quad]:
    """The parser's quads; each syntax error becomes a bad line (its first line, in the file's numbering). An error
    that ran to the end of the file from an earlier line (the parser cannot get past it: an unterminated string or
    IRI) ends the parse and sets ``report["resume_at"]`` to that line: :func:`_read_rdf` parses again after it.
    ``lines``: the file's; ``offset``: what turns the parser's line numbers into the file's."""
    spath = str(lines.path)
    while True:
        try:
            yield next(parser)
        except StopIteration:
            return
        except SyntaxError as exc:
            line = (exc.lineno or 0) and exc.lineno + offset
            if line and exc.offset and _RUNAWAY not in str(exc):
                found, column = lines.physical(line, exc.offset)
                if found != line:
                    reason = _reason(str(exc), column)
                    builder.bad_line(spath, found, f"{reason} — after a string opened on line {line} ran on over "
                                                   "the line break (an unterminated quote?)")
                    continue
            reason = _reason(str(exc))
            if _RUNAWAY in reason and line:
                after = lines.count() - line
                if after > 0:
                    report["resume_at"] = line
                    reason += (f" — the parser could not get past line {line} (an unterminated string or IRI?): "
                               f"parsing again from line {line + 1}")
                builder.bad_line(spath, line, reason)
                return
            builder.bad_line(spath, line, reason)


def _read_rdf(path: Path, fmt: str, file_no: int, builder: _Builder, report: dict,
              on_bytes: Callable[[int], None] | None = None) -> int:
    """Append the file's triples; where the parser cannot get past an error (see :func:`_statements`) parse again
    from the next line, with the prefixes and base declared so far, at most ``_MAX_RESUMES`` times — then the rest
    of the file is lost: ``report`` gets ``unread_after`` (the line) and ``unread_lines`` (how many after it).
    ``report["resumed_after"]``: the lines parsing started again after."""
    count, skip = 0, 0
    prefixes: dict[str, str] = {}
    base: str | None = None
    resumed: list[int] = []
    with closing(_Lines(path)) as lines:  # one per file: its line lengths and count read once
        while True:
            with _open(path, on_bytes) as raw:
                header = b""
                if skip:
                    for _ in range(skip):  # only after a runaway error: the lines already parsed
                        raw.readline()
                    if fmt in _PREFIXED:
                        header = "".join(f"@prefix {p}: <{iri}> .\n" for p, iri in prefixes.items()).encode("utf-8")
                parser = ox.parse(input=_Headed(raw, header) if header else raw, format=_RDF_FORMATS[f".{fmt}"],
                                  lenient=True, base_iri=base)
                quads = _statements(parser, lines, builder, skip - header.count(b"\n"), report)
                held: list[ox.Quad] = []  # statements with a literal spanning lines: kept only if the parse ran clean
                count += _add_quads(_hold_multiline(quads, held), str(path), file_no, builder)
                at = report.pop("resume_at", None)
                if at is not None and held:  # a string ran on from an unterminated quote: a bogus literal, not a value
                    builder.bad_line(str(path), at, f"{len(held)} statement(s) with a string running past line {at} "
                                     "(an unterminated quote?) not imported")
                elif held:
                    count += _add_quads(iter(held), str(path), file_no, builder)
                if at is None:
                    break
                if at <= skip or len(resumed) >= _MAX_RESUMES:
                    report.update(unread_after=at, unread_lines=lines.count() - at)
                    break
                resumed.append(at)
                prefixes, base, skip = dict(getattr(parser, "prefixes", {}) or {}), getattr(parser, "base_iri", None), at
    if resumed:
        report["resumed_after"] = resumed
    return count


def _hold_multiline(quads: Iterator[ox.Quad], held: list[ox.Quad]) -> Iterator[ox.Quad]:
    """The quads, except those whose literal object holds a line break: those go to ``held`` (a short string cannot
    hold one, so after an unterminated quote the parser's recovery may have made one of the following lines)."""
    for quad in quads:
        if isinstance(quad.object, ox.Literal) and "\n" in quad.object.value:
            held.append(quad)
        else:
            yield quad


def _add_quads(quads: Iterator[ox.Quad], spath: str, file_no: int, builder: _Builder) -> int:
    """Append the quads' triples, names and other names to ``builder``; returns the triples added."""
    count = 0
    node, relation, add, name = builder.node, builder.relation, builder.add, builder.name
    name_rank, lang_rank = builder.name_rank, builder.lang_rank
    name_or_alias, alias, alias_predicates = builder.name_or_alias, builder.alias, builder.alias_predicates
    for quad in quads:
        s, p, o = quad.subject, quad.predicate.value, quad.object
        skey = s.value if isinstance(s, ox.NamedNode) else f"_:{file_no}:{s.value}"
        if isinstance(o, ox.Literal):
            rank = name_rank.get(p)
            if rank is None and p.endswith(_OWN_NAME):  # Freebase's name predicate in another namespace
                rank = 0
            elif p.endswith(_OWN_VALUE):  # kgrag's own export: the node's value, already its name
                builder.name_triples += 1
                continue
            if rank is not None:
                name_or_alias(node(skey), lang_rank(o.language) * 10 + rank, o.value)
                builder.name_triples += 1
                continue
            if p in alias_predicates or p.endswith(_OWN_ALIAS):
                if lang_rank(o.language) <= _ALIAS_LANG_RANK:
                    alias(node(skey), o.value)
                builder.name_triples += 1
                continue
            okey = _literal_key(o, builder)
            tail = node(okey)
            name(tail, -1, o.value)
        elif isinstance(o, ox.NamedNode):
            if p == DIRECT_CLAIM:  # wd:P19 wikibase:directClaim wdt:P19: schema, not an edge
                builder.direct_claims[o.value] = skey
                builder.property_triples += 1
                continue
            tail = node(o.value)
            if p in _TYPE_PREDICATES:
                builder.classes.add(tail)
        elif isinstance(o, ox.BlankNode):
            tail = node(f"_:{file_no}:{o.value}")
        else:  # an RDF-star quoted triple: not a node of this graph
            builder.bad_line(spath, 0, "quoted triples are not supported")
            continue
        add(node(skey), relation(p), tail)
        count += 1
    return count


def _literal_type(value: str) -> str | None:
    if _YEAR.match(value):
        return "gYear"
    if _INT.match(value):
        return "integer"
    return "decimal" if _DECIMAL.match(value) else None


def _read_lines(path: Path, builder: _Builder, on_bytes: Callable[[int], None] | None = None) -> int:
    spath, count = str(path), 0
    node, relation, add, name = builder.node, builder.relation, builder.add, builder.name
    with _open(path, on_bytes) as fh:
        for lineno, raw in enumerate(fh, 1):
            line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            parts = line.split("\t") if "\t" in line else line.split("|")
            if len(parts) != 3:
                builder.bad_line(spath, lineno, f"expected 3 tab- or '|'-separated fields, got {len(parts)}")
                continue
            h, r, t = (p.strip() for p in parts)
            if not (h and r and t):
                builder.bad_line(spath, lineno, "empty head, relation or tail")
                continue
            hi, ti = node(h), node(t)
            name(hi, 0, h)
            name(ti, 0, t)
            kind = _literal_type(t)
            if kind is not None and t not in builder.literal_types:
                builder.literal_types[t] = kind
            add(hi, relation(r), ti)
            count += 1
    return count


def read_triple_files(paths: Sequence[str | Path], lang: str = "en", max_bad_lines: int = 1000,
                      progress: Callable[[str, int], None] | None = None,
                      alias_predicates: Sequence[str] = (), strict: bool = False,
                      on_bytes: Callable[[int], None] | None = None) -> TripleArrays:
    """Read every file (see the module docstring); ``progress(path, triples)`` after each file; ``on_bytes(n)``
    as the files are read (``n``: bytes read so far of all of them, on disk);
    ``alias_predicates``: IRIs of further other-name predicates (beside :data:`ALIAS_PREDICATES`); ``strict``: a
    :class:`KgragError` (``file:line: reason``) at the first malformed statement or line instead of skipping it."""
    if not paths:
        raise KgragError("no triple files given (--triples PATH)")
    resolved = [Path(p).expanduser() for p in paths]
    formats = []
    for path in resolved:
        if not path.is_file():
            raise KgragError(f"triple file not found: {path}")
        formats.append(detect_format(path))
    if "lines" in formats and len(set(formats)) > 1:
        raise KgragError("mix of RDF and head-relation-tail line files: import them as separate datasets (RDF "
                         "nodes are keyed by IRI, line nodes by their text)")
    builder = _Builder(lang, max_bad_lines, alias_predicates, strict)
    files = []
    done_bytes = 0
    for file_no, (path, fmt) in enumerate(zip(resolved, formats, strict=True)):
        bad_before = builder.bad
        report: dict = {"path": str(path), "format": fmt}
        told = (lambda n, base=done_bytes: on_bytes(base + n)) if on_bytes is not None else None
        n = _read_lines(path, builder, told) if fmt == "lines" else _read_rdf(path, fmt, file_no, builder, report, told)
        done_bytes += path.stat().st_size
        files.append({**report, "triples": n, "bad_lines": builder.bad - bad_before})
        if progress is not None:
            progress(str(path), n)
    if not builder.h:
        shown = ", ".join(str(p) for p in resolved)
        raise KgragError(f"no triples read from {shown}" + (f" ({builder.bad} malformed lines, first: "
                                                          f"{builder.issues[0]})" if builder.issues else ""))
    return builder.arrays("slug" if formats[0] == "lines" else "iri", files)

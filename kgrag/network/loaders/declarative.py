"""Load a network from a schema file (YAML or JSON) plus instance and link files (CSV, JSON or JSONL).

Schema file (YAML shown; JSON has the same shape) — the fields of :class:`kgrag.network.schema.model.KnowledgeNetwork`
plus a ``data`` section naming the data files (paths relative to the schema file)::

    kn_id: clinic                       # optional: the kn_id argument / file stem otherwise
    name: Tiny clinic
    comment: Two diseases and their symptoms
    object_types:
      - id: Disease
        name: 疾病
        comment: 疾病
        display_key: name
        data_properties:
          - {name: name, type: string, condition_operations: [knn, match, "==", prefix]}
          - {name: cost, type: integer, condition_operations: [">", "<", range]}
          - {name: cure_way, type: "string[]", condition_operations: [contain]}
    relation_types:
      - {id: has_symptom, name: 症状, source_object_type_id: Disease, target_object_type_id: Symptom}
    action_types: []
    data:
      instances:
        - {object_type: Disease, file: diseases.csv, id_column: id}   # id_column defaults to "id"
        - {object_type: Symptom, file: symptoms.json}
      links:
        - {relation_type: has_symptom, file: has_symptom.csv}         # columns source_id, target_id

Instance files: CSV with a header row (one column per property; the id column is not a property unless it is
also declared as one or is the display key; empty cells are omitted), or JSON (a list of objects) / JSONL (one object per line). Each
CSV cell is converted by the declared property type: integer/float → number, boolean → true/false, list types
(``string[]``, ``list``, ``array``) → JSON array text or ``|``-separated items. Link files: CSV/JSON/JSONL with
``source_id`` and ``target_id`` (a ``relation_type_id`` column/field may replace the entry's ``relation_type``).
When a file has no id column, ids are ``<object type>:<display key value>``. An error in a data file names the file and
the line a record starts on (CSV, JSONL) or its position in the list (JSON: ``file item N``).

Every row is checked before a store is touched, and one bad row rejects the whole load (or update): a malformed
line (a stray or unterminated CSV quote, more or fewer cells than the header, JSONL that does not parse, text that
is not UTF-8), a duplicate id within a type, a link of an unknown relation type, a link whose source or target is no
instance of the relation's source / target type in the instance files. The display key must be a column (field) of
each instance file of its type, and a display_key the schema declares must be one of the type's data properties
(when it declares any): else answers would name instances by other columns (a table's rows: their link rows
are checked against them too).

An entry may name a database ``table`` instead of a ``file`` (a network bound to a table, kept in step by the
daily sync :mod:`kgrag.network.sync.table`)::

      instances:
        - {object_type: Disease, table: diseases, url_env: CLINIC_DB_URL, id_column: id,
           incremental_column: updated_at, deleted_column: deleted}
      links:
        - {relation_type: has_symptom, table: disease_symptoms, url_env: CLINIC_DB_URL,
           source_column: disease_id, target_column: symptom_id}

Every setting of such an entry: :mod:`kgrag.network.loaders.table_source`. Loading the schema file reads every
live row of each table (tombstoned rows left out).
"""

from __future__ import annotations

import csv
import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from kgrag.errors import KgragError
from kgrag.network.loaders import NetworkData
from kgrag.network.loaders.table_source import TableReader, TableSource, parse_table_source
from kgrag.network.schema.conditions import is_list_type
from kgrag.network.schema.model import Instance, KnowledgeNetwork, Link, ObjectType

__all__ = ["FileInstances", "FileLinks", "FilesDigest", "changed_types", "files_fingerprint", "iter_located_records",
           "load_declarative", "located_records", "read_file_entries", "read_records", "read_schema", "table_sources"]

_NUMERIC = {"integer", "int", "long", "short"}
_FLOAT = {"float", "double", "decimal", "number", "numeric"}


def read_records(path: Path) -> list[dict[str, Any]]:
    """Rows of a CSV (header row), JSON (list of objects) or JSONL file."""
    return [row for _, row in located_records(path)]


def located_records(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """``(where, row)`` of each record of a CSV, JSON or JSONL file: ``where`` is ``path:line`` (the line the
    record starts on) or ``path item N`` (JSON). A record that is not an object is a :class:`KgragError`."""
    return list(iter_located_records(path))


def iter_located_records(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """:func:`located_records` one record at a time (CSV and JSONL streamed: a file is never held whole)."""
    if not path.is_file():
        raise KgragError(f"data file not found: {path}")
    suffix = path.suffix.lower()
    if suffix == ".csv":
        yield from _csv_records(path)
        return
    if suffix == ".jsonl":
        records = _jsonl_records(path)
    elif suffix == ".json":
        try:
            data = json.loads(_text(path))
        except json.JSONDecodeError as exc:
            raise KgragError(f"{path}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}") from None
        if not isinstance(data, list):
            raise KgragError(f"{path}: expected a JSON list of objects")
        records = ((f"{path} item {n}", row) for n, row in enumerate(data, 1))
    else:
        raise KgragError(f"{path}: unsupported data file type {suffix!r} (use .csv, .json or .jsonl)")
    for where, row in records:
        if not isinstance(row, dict):
            raise KgragError(f"{where}: expected an object, not {type(row).__name__}")
        yield where, row


def _jsonl_records(path: Path) -> Iterator[tuple[str, Any]]:
    n = 0
    try:
        with path.open(encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):  # noqa: B007 - n names the line of a decoding error too
                if line.strip():
                    try:
                        yield f"{path}:{n}", json.loads(line)
                    except json.JSONDecodeError as exc:
                        raise KgragError(f"{path}:{n}:{exc.colno}: not valid JSON: {exc.msg}") from None
    except UnicodeDecodeError as exc:
        raise KgragError(f"{path}:{n + 1}: not UTF-8 text ({exc.reason})") from None


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise KgragError(f"{path}: not UTF-8 text (byte {exc.start}: {exc.reason})") from None


def _csv_records(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """The CSV rows (see :func:`located_records`); a malformed line — a stray or unterminated quote, more or fewer
    cells than the header — is a :class:`KgragError` naming ``file:line``."""
    start = 2  # the line after the header (a quoted cell may span lines)
    try:
        with path.open(encoding="utf-8", newline="") as fh:
            reader = csv.reader(fh, strict=True)  # rows zipped with the header here: DictReader's are slower
            header = next(reader, None) or []
            start = reader.line_num + 1
            prefix = f"{path}:"
            for cells in reader:
                if len(cells) != len(header):
                    if cells:  # a blank line is skipped (as csv.DictReader skips it)
                        raise KgragError(f"{path}:{start}: {len(cells)} cells, the header has {len(header)} "
                                         f"({', '.join(header)})")
                else:
                    yield prefix + str(start), dict(zip(header, cells, strict=True))
                start = reader.line_num + 1
    except csv.Error as exc:
        raise KgragError(f"{path}:{start}: malformed CSV: {exc}" + (" (an unterminated quote?)" if "end of data" in
                                                                    str(exc) else "")) from None
    except UnicodeDecodeError as exc:
        raise KgragError(f"{path}:{start}: not UTF-8 text ({exc.reason})") from None


#: property types whose CSV text is kept as it is (:func:`_convert` returns it unchanged)
_AS_TEXT = {"string", "text", "date", "datetime", "timestamp", "time"}


def _convert(value: Any, prop_type: str, where: str, column: str | None = None) -> Any:
    """A cell's value as its declared property type (text stays text: numbers, booleans and lists are read);
    a :class:`KgragError` naming ``where`` (and ``column``) when it cannot be read so."""
    if not isinstance(value, str):
        return value
    t = prop_type.lower()
    try:
        if t in _NUMERIC:
            return int(value)
        if t in _FLOAT:
            return float(value)
        if t in ("boolean", "bool"):
            if value.lower() not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError(value)
            return value.lower() in ("true", "1", "yes")
        if is_list_type(t):
            text = value.strip()
            return (
                json.loads(text)
                if text.startswith("[")
                else [v.strip() for v in text.split("|") if v.strip()]
            )
    except ValueError as exc:
        at = f"{where} column {column!r}" if column is not None else where
        raise KgragError(f"{at}: cannot read {value!r} as {prop_type}") from exc
    return value


def _file_instances(ot: ObjectType, path: Path, id_column: str) -> Iterator[tuple[str, Instance]]:
    """``(where, instance)`` of each row of the file, as read; after the last, the display key must have been a
    column (field) of the file: else a :class:`KgragError` naming the file, the type, the missing column and the
    columns the file has."""
    types = {p.name: p.type for p in ot.data_properties}
    # columns read as they are (text types, undeclared columns) skip the conversion call: a million rows' cells
    converted = {name: kind for name, kind in types.items() if kind.lower() not in _AS_TEXT}
    skip_id = id_column not in types and id_column != ot.display_key
    columns: dict[str, None] = {}
    display_seen = False
    for where, row in iter_located_records(path):
        if not display_seen:  # the columns, for the message when no row has the display key
            columns.update(dict.fromkeys(row))
            display_seen = ot.display_key in row
        props = {}
        for key, value in row.items():
            if value is None or value == "" or (skip_id and key == id_column):
                continue
            kind = converted.get(key)
            props[key] = value if kind is None else _convert(value, kind, where, key)
        raw_id = row.get(id_column)
        if raw_id in (None, ""):
            name = props.get(ot.display_key)
            if name in (None, ""):
                raise KgragError(f"{where}: no {id_column!r} and no {ot.display_key!r} to derive an id from")
            raw_id = f"{ot.id}:{name}"
        yield where, Instance(object_type_id=ot.id, id=str(raw_id), properties=props)
    if columns and not display_seen:
        raise KgragError(f"{path}: object type {ot.id!r} has no display column {ot.display_key!r} (its "
                         f"display_key); the file's columns: {', '.join(columns)} — add the column or set "
                         "display_key to one of them")


def _duplicate(where: str, inst: Instance, first: str) -> KgragError:
    return KgragError(f"{where}: duplicate id {inst.id!r} of object type {inst.object_type_id!r} (first on {first})")


def _instances(ot: ObjectType, path: Path, id_column: str, seen: dict[tuple[str, str], str]) -> list[Instance]:
    """The file's instances of ``ot`` (:func:`_file_instances`); ``seen`` ((type, id) → where, across files)
    catches a duplicate id."""
    out = []
    for where, inst in _file_instances(ot, path, id_column):
        first = seen.setdefault((ot.id, inst.id), where)
        if first != where:
            raise _duplicate(where, inst, first)
        out.append(inst)
    return out


def _some(names: dict[str, Any] | list[str], shown: int = 10) -> str:
    """The first ``shown`` names, comma-separated (``…`` when there are more)."""
    names = list(names)
    return ", ".join(names[:shown]) + (", …" if len(names) > shown else "")


def _check_display_keys(network: KnowledgeNetwork, path: Path) -> None:
    """A display_key the schema declares must be one of its type's data properties (a type that declares none
    takes its file's columns as they come)."""
    for ot in network.object_types:
        names = [p.name for p in ot.data_properties]
        if "display_key" in ot.model_fields_set and names and ot.display_key not in names:
            raise KgragError(f"{path}: object type {ot.id!r}: display_key {ot.display_key!r} is not one of its "
                             f"data_properties ({', '.join(names)})")


def _links(network: KnowledgeNetwork, path: Path, entries: list[dict[str, Any]],
           ids_by_type: dict[str, set[str]]) -> list[Link]:
    """The links of the data.links entries; a row of an unknown relation type, or whose source / target is no
    instance of the relation's source / target type (in the instance files), is a :class:`KgragError` at
    ``file:line`` — before any store is touched."""
    return list(_file_links(network, path, entries, ids_by_type))


def _file_links(network: KnowledgeNetwork, path: Path, entries: list[dict[str, Any]],
                ids_by_type: dict[str, set[str]]) -> Iterator[Link]:
    """:func:`_links` one at a time."""
    relation_types = {rt.id: rt for rt in network.relation_types}
    known = _some(relation_types)
    for entry in entries:
        named = entry.get("relation_type")
        if named and named not in relation_types:
            raise KgragError(f"{path}: data.links names unknown relation type {named!r} (the network's: {known})")
        for where, row in iter_located_records(path.parent / entry["file"]):
            rel = row.get("relation_type_id") or named
            if not rel or not row.get("source_id") or not row.get("target_id"):
                raise KgragError(f"{where}: a link needs relation_type, source_id and target_id")
            rt = relation_types.get(str(rel))
            if rt is None:
                raise KgragError(f"{where}: unknown relation type {rel!r} (the network's: {known})")
            link = Link(relation_type_id=rt.id, source_id=str(row["source_id"]), target_id=str(row["target_id"]))
            for end, ident, type_id in (("source", link.source_id, rt.source_object_type_id),
                                        ("target", link.target_id, rt.target_object_type_id)):
                if ident not in ids_by_type.get(type_id, ()):
                    other = [t for t, ids in ids_by_type.items() if ident in ids]
                    what = f"an instance of {', '.join(map(repr, other))}, not of" if other else "no instance of"
                    raise KgragError(f"{where}: {rt.id} link's {end} {ident!r} is {what} {type_id!r}")
            yield link


def _read_schema(path: Path) -> Any:
    """The schema file's document; a syntax error names the file, line and column in one line."""
    text = path.read_text(encoding="utf-8")
    if path.suffix.lower() == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise KgragError(f"{path}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}") from None
    try:
        return yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
        problem = " ".join(f"{exc.problem or ''} {exc.context or ''}".split()) or "syntax error"
        if exc.context_mark is not None and mark is not None and exc.context_mark.line != mark.line:
            problem += f" started on line {exc.context_mark.line + 1}"
        raise KgragError(f"{where}: not valid YAML: {problem}") from None
    except yaml.YAMLError as exc:
        raise KgragError(f"{path}: not valid YAML: {' '.join(str(exc).split())}") from None


def table_sources(path: Path, network: KnowledgeNetwork, data: Any) -> list[tuple[str, TableSource]]:
    """``(where, source)`` of each ``data`` entry naming a table (:mod:`kgrag.network.loaders.table_source`), in
    declaration order, instances first; every entry is checked: a mapping with a ``file`` or a ``table`` whose
    object / relation type the network declares (else a one-line :class:`KgragError` naming the entry)."""
    if not isinstance(data, dict):
        raise KgragError(f"{path}: data must be a mapping with instances and links lists")
    kinds = {"instances": {ot.id for ot in network.object_types},
             "links": {rt.id for rt in network.relation_types}}
    out = []
    for section, known in kinds.items():
        for n, entry in enumerate(data.get(section) or [], 1):
            where = f"{path}: data.{section} entry {n}"
            if not isinstance(entry, dict) or not (entry.get("file") or entry.get("table")):
                raise KgragError(f"{where} needs a file or a table (a mapping with file: … or table: …)")
            if not entry.get("table"):
                continue
            if entry.get("file"):
                raise KgragError(f"{where} names both a file and a table: keep one")
            source = parse_table_source(entry, where)
            name = source.relation_type if section == "links" else source.object_type
            if name is None or name not in known:
                what = "relation_type" if section == "links" else "object_type"
                raise KgragError(f"{where}: {what} {name!r} is not declared by the network")
            out.append((where, source))
    return out


def read_schema(schema_path: str | Path, kn_id: str | None = None) -> tuple[KnowledgeNetwork, Any]:
    """The schema file's network (validated) and its ``data`` section as written (nothing read from it)."""
    path = Path(schema_path)
    if not path.is_file():
        raise KgragError(f"network schema file not found: {path}")
    doc = _read_schema(path)
    if not isinstance(doc, dict):
        raise KgragError(f"{path}: expected a mapping at the top level")
    data = doc.pop("data", None) or {}
    doc["kn_id"] = kn_id or doc.get("kn_id") or path.stem
    doc.setdefault("name", doc["kn_id"])
    try:
        return KnowledgeNetwork.model_validate(doc), data
    except ValidationError as exc:
        first = exc.errors()[0]
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        where = ".".join(map(str, first["loc"])) or "top level"
        raise KgragError(f"{path}: invalid network schema: {where}: {first['msg']}{more}") from None
    except ValueError as exc:
        raise KgragError(f"{path}: invalid network schema: {' '.join(str(exc).split())}") from None


@dataclass(frozen=True)
class FilesDigest:
    """What :func:`files_fingerprint` hashed: ``fingerprint`` (sha256 of the schema file and every data file it
    names, in order) and ``parts`` (sha256 of each file alone: ``schema``, and ``instances/<file>`` /
    ``links/<file>`` as the schema names them) — what :func:`changed_types` compares to read only changed files."""

    kn_id: str
    fingerprint: str
    parts: dict[str, str]


def files_fingerprint(schema_path: str | Path, kn_id: str | None = None) -> FilesDigest | None:
    """The schema file's and its data files' hashes (:class:`FilesDigest`): equal fingerprints mean the same
    network and data; None when an entry names a table (a database's rows have no file to hash) or a file is
    missing (the load itself then says which)."""
    path = Path(schema_path)
    network, data = read_schema(path, kn_id)
    schema_bytes = path.read_bytes()
    digest = hashlib.sha256(schema_bytes)
    parts = {"schema": hashlib.sha256(schema_bytes).hexdigest()}
    for section in ("instances", "links"):
        for entry in data.get(section) or []:
            if not isinstance(entry, dict) or entry.get("table") or not entry.get("file"):
                return None
            file = path.parent / str(entry["file"])
            if not file.is_file():
                return None
            digest.update(b"\x00" + str(entry["file"]).encode() + b"\x00")
            alone = hashlib.sha256()
            with file.open("rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    digest.update(block)
                    alone.update(block)
            parts[f"{section}/{entry['file']}"] = alone.hexdigest()
    return FilesDigest(network.kn_id, digest.hexdigest(), parts)


def changed_types(network: KnowledgeNetwork, data: Any, before: dict[str, str] | None, now: dict[str, str]
                  ) -> tuple[set[str], set[str]] | None:
    """``(object types, relation types)`` whose data must be read again because a file differs from the files
    the stored network was made from (``before``: their :attr:`FilesDigest.parts`): every object type with a
    changed instance file (all its files are read), and every relation type when a link file changed (a link row
    may name its own relation type: links are read whole or not at all). The rest is as stored. None when that
    cannot be known: nothing recorded, or the schema file changed (types, entries)."""
    if not before or before.get("schema") != now.get("schema"):
        return None

    def changed(section: str, entry: dict[str, Any]) -> bool:
        part = f"{section}/{entry['file']}"
        return before.get(part) is None or before[part] != now.get(part)

    types = {str(e.get("object_type")) for e in data.get("instances") or [] if changed("instances", e)}
    links_changed = any(changed("links", e) for e in data.get("links") or [])
    return types, {rt.id for rt in network.relation_types} if links_changed else set()


def _instance_entries(path: Path, network: KnowledgeNetwork, data: Any) -> list[tuple[ObjectType, Path, str]]:
    """``(object type, file, id column)`` of each ``data.instances`` entry naming a file; an entry of an unknown
    object type is a :class:`KgragError`."""
    object_types = {ot.id: ot for ot in network.object_types}
    out = []
    for entry in data.get("instances") or []:
        if entry.get("table"):
            continue
        ot = object_types.get(entry.get("object_type", ""))
        if ot is None:
            raise KgragError(f"{path}: data.instances names unknown object type {entry.get('object_type')!r} (the "
                             f"network's: {_some(object_types)})")
        out.append((ot, path.parent / entry["file"], entry.get("id_column", "id")))
    return out


def read_file_entries(path: Path, network: KnowledgeNetwork, data: Any,
                      more_instances: list[Instance] | None = None, types: set[str] | None = None,
                      links: bool = True, stored_ids: Callable[[str], set[str]] | None = None
                      ) -> tuple[list[Instance], list[Link]]:
    """The instances and links of the ``data`` entries naming a file (entries naming a table are skipped); a link
    row is checked against these instances and ``more_instances`` (a table's). ``types``: only those object types'
    entries are read (a sync of changed files, :func:`changed_types`), a link's endpoint of another type checked
    against ``stored_ids(type)`` (its files are as stored); ``links`` False: no link is read."""
    instances: list[Instance] = []
    seen: dict[tuple[str, str], str] = {}
    for ot, file, id_column in _instance_entries(path, network, data):
        if types is None or ot.id in types:
            instances.extend(_instances(ot, file, id_column, seen))
    if not links:
        return instances, []
    ids_by_type: dict[str, set[str]] = {ot.id: set() for ot in network.object_types}
    for inst in (*instances, *(more_instances or ())):
        ids_by_type.setdefault(inst.object_type_id, set()).add(inst.id)
    if types is not None and stored_ids is not None:
        for type_id in {end for rt in network.relation_types
                        for end in (rt.source_object_type_id, rt.target_object_type_id)} - types:
            ids_by_type[type_id] = stored_ids(type_id)
    entries = [e for e in data.get("links") or [] if not e.get("table")]
    return instances, _links(network, path, entries, ids_by_type)


def _stamp(file: Path) -> tuple[int, int]:
    stat = file.stat()
    return stat.st_size, stat.st_mtime_ns


@dataclass
class _Files:
    """Data files read again on each pass: each must still be as it was when it was checked."""

    stamps: dict[Path, tuple[int, int]] = field(default_factory=dict)

    def note(self, file: Path) -> None:
        self.stamps[file] = _stamp(file)

    def same(self, file: Path) -> None:
        if file.is_file() and _stamp(file) == self.stamps.get(file):
            return
        raise KgragError(f"{file}: changed while the network was being loaded; load it again")


@dataclass
class FileInstances:
    """The instances of a schema file's instance files, read again from the files each time they are iterated
    (what :func:`read_file_entries` returns, in its order): a load holds one chunk of a million-row network, not
    all of it. Made by :func:`load_declarative` with ``lazy=True`` after one pass that made every check;
    ``ids_by_type`` holds the ids it read (a store's load takes them as checked). A file that changed since is a
    :class:`KgragError` when it is read again."""

    entries: list[tuple[ObjectType, Path, str]]
    ids_by_type: dict[str, set[str]]
    files: _Files

    def __len__(self) -> int:
        return sum(len(ids) for ids in self.ids_by_type.values())

    def __iter__(self) -> Iterator[Instance]:
        for ot, file, id_column in self.entries:
            self.files.same(file)
            for _where, inst in _file_instances(ot, file, id_column):
                yield inst
            self.files.same(file)


@dataclass
class FileLinks:
    """The links of a schema file's link files, read again (and checked against ``ids_by_type``) each time they
    are iterated; ``rows`` counts them, duplicates included."""

    network: KnowledgeNetwork
    path: Path
    entries: list[dict[str, Any]]
    ids_by_type: dict[str, set[str]]
    files: _Files
    rows: int = 0

    def __len__(self) -> int:
        return self.rows

    def __iter__(self) -> Iterator[Link]:
        for entry in self.entries:
            file = self.path.parent / entry["file"]
            self.files.same(file)
            yield from _file_links(self.network, self.path, [entry], self.ids_by_type)
            self.files.same(file)


def _lazy_entries(path: Path, network: KnowledgeNetwork, data: Any) -> tuple[FileInstances, FileLinks]:
    """:func:`read_file_entries`' checks in one pass over the files, keeping only the ids (a duplicate's first
    line is found by reading its type's files again); the instances and links come back as re-readable files."""
    files = _Files()
    entries = _instance_entries(path, network, data)
    ids_by_type: dict[str, set[str]] = {ot.id: set() for ot in network.object_types}
    for n, (ot, file, id_column) in enumerate(entries):
        if file.is_file():
            files.note(file)
        seen = ids_by_type[ot.id]
        for where, inst in _file_instances(ot, file, id_column):
            if inst.id in seen:
                first = next(w for o, f, c in entries[:n + 1] if o.id == ot.id for w, i in _file_instances(o, f, c)
                             if i.id == inst.id)
                raise _duplicate(where, inst, first)
            seen.add(inst.id)
    link_entries = [e for e in data.get("links") or [] if not e.get("table")]
    for entry in link_entries:
        if (path.parent / entry["file"]).is_file():
            files.note(path.parent / entry["file"])
    links = FileLinks(network, path, link_entries, ids_by_type, files)
    links.rows = sum(1 for _ in _file_links(network, path, link_entries, ids_by_type))
    return FileInstances(entries, ids_by_type, files), links


def load_declarative(schema_path: str | Path, kn_id: str | None = None, lazy: bool = False) -> NetworkData:
    """Read the schema file and every data file and table it names (see the module docstring). ``lazy``: when
    no entry names a table, every file is checked in one pass and the instances and links come back as
    :class:`FileInstances` / :class:`FileLinks`, read from the files again when iterated (bounded memory)."""
    path = Path(schema_path)
    network, data = read_schema(path, kn_id)
    _check_display_keys(network, path)
    tables = table_sources(path, network, data)  # checks every entry first
    if lazy and not tables:
        instances, links = _lazy_entries(path, network, data)
        return network, instances, links  # type: ignore[return-value]
    table_instances: list[Instance] = []
    table_links: list[Link] = []
    for where, source in tables:  # every live row (kgrag.network.loaders.table_source)
        with TableReader(source, where) as reader:
            batch = reader.read(network)
        table_instances.extend(batch.instances)
        table_links.extend(batch.links)
    instances, links = read_file_entries(path, network, data, table_instances)
    return network, instances + table_instances, links + table_links

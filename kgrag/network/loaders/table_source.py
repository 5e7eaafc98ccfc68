"""A network's instances or links read from a database table (SQLAlchemy; PostgreSQL, SQLite, any dialect it knows).

    source = TableSource.model_validate({"object_type": "Course", "table": "courses", "url_env": "COURSES_DB_URL",
                                         "incremental_column": "updated_at", "deleted_column": "deleted"})
    with TableReader(source, where="school.yaml data.instances entry 1") as reader:
        batch = reader.read(network, since=None)        # every live row (a full scan); since=w: rows with key >= w

A schema file's ``data`` section (:mod:`kgrag.network.loaders.declarative`) may name a ``table`` instead of a
``file``::

    data:
      instances:
        - {object_type: Course, table: courses, url_env: COURSES_DB_URL, id_column: id,
           incremental_column: updated_at, deleted_column: deleted, columns: {name: title}}
      links:
        - {relation_type: teaches, table: teaching, url: "postgresql+psycopg://…", source_column: teacher_id,
           target_column: course_id, incremental_column: updated_at, deleted_column: deleted}

- ``url`` (a SQLAlchemy URL) or ``url_env`` (the name of an environment variable holding it, so no password sits in
  the schema file); ``db_schema`` names a database schema (PostgreSQL) when the table is not on the search path.
- Instances: ``id_column`` (default ``id``) is the instance id; each declared data property of the object type is
  read from the column of the same name, or from the column ``columns`` maps it to (``{property: column}``);
  declared properties without a column are left out, but the object type's ``display_key`` must have one. NULL
  cells are omitted; dates and times become ISO 8601 text, decimals numbers, a text cell of a list-typed property
  is read as in CSV files (JSON array text or ``|``-separated items).
- Links: ``source_column`` / ``target_column`` (default ``source_id`` / ``target_id``); a link is identified by
  (relation type, source, target), so a row whose endpoint changes is a deleted link plus a new one: give the
  table a ``deleted_column`` or let the full scan see it.
- ``incremental_column`` (optional): a column that grows whenever a row is inserted or changed (an integer
  sequence, a timestamp). A sync reads only the rows whose key is ``>=`` the watermark stored after the previous
  run (``>=``, not ``>``: rows sharing the last key are read again, which the content-hashed upsert makes a no-op,
  so a row written in the same second/tick as the watermark is never skipped). Without one, every sync reads the
  whole table (fine for small lookup tables). ``lookback`` (optional, default 0) widens each read to keys ``>=``
  watermark − lookback (seconds for a timestamp or date key, units for a number key): a row written by a
  transaction that committed after a later one (its key below the watermark when the sync ran) is then still
  read by the next run; the full scan catches it otherwise.
- ``deleted_column`` (optional): a tombstone — a row whose value there is true (a boolean true, a non-zero number,
  ``'true'``/``'t'``/``'yes'``/``'y'``/``'1'``, or any non-NULL timestamp) is a deletion; the incremental read sees
  it as it sees any change. Tables without one have deletions seen by the full id scan (every Nth run, see
  :mod:`kgrag.network.sync.table`).

Table and column names are never pasted into SQL: the table is reflected (its real columns listed by the
database) and every name of the entry must be one of them; statements are built with SQLAlchemy's quoted
identifiers and bound parameters. A bad entry is a :class:`~kgrag.errors.KgragError` naming the entry and the
column.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from sqlalchemy import Column, MetaData, Table, create_engine, func, select
from sqlalchemy.engine import Engine
from sqlalchemy.exc import NoSuchTableError, SQLAlchemyError

from kgrag.errors import KgragError
from kgrag.network.schema.conditions import is_list_type
from kgrag.network.schema.model import Instance, KnowledgeNetwork, Link

__all__ = ["TableBatch", "TableReader", "TableSource", "parse_table_source", "watermark_text", "watermark_value",
           "widened"]

_TRUE_TEXT = frozenset({"true", "t", "yes", "y", "1"})
_INTEGER = frozenset({"integer", "int", "long", "short"})
_FLOAT = frozenset({"float", "double", "decimal", "number", "numeric"})


class TableSource(BaseModel):
    """One ``data.instances`` / ``data.links`` entry naming a table (see the module docstring)."""

    model_config = ConfigDict(extra="forbid")

    table: str = Field(min_length=1)
    object_type: str | None = None
    relation_type: str | None = None
    url: str | None = None
    url_env: str | None = None
    db_schema: str | None = None
    id_column: str = "id"
    source_column: str = "source_id"
    target_column: str = "target_id"
    columns: dict[str, str] = Field(default_factory=dict)
    incremental_column: str | None = None
    lookback: float = Field(default=0, ge=0)
    deleted_column: str | None = None

    @model_validator(mode="after")
    def _one_kind_one_url(self) -> TableSource:
        if (self.object_type is None) == (self.relation_type is None):
            raise ValueError("name either object_type (instances) or relation_type (links)")
        if (self.url is None) == (self.url_env is None):
            raise ValueError("give the database as url or url_env (an environment variable holding the URL)")
        return self

    @property
    def is_links(self) -> bool:
        return self.relation_type is not None

    @property
    def key(self) -> str:
        """The source's name in the watermark table: ``instances:<type>:<table>`` or ``links:<relation>:<table>``."""
        kind, name = ("links", self.relation_type) if self.is_links else ("instances", self.object_type)
        table = f"{self.db_schema}.{self.table}" if self.db_schema else self.table
        return f"{kind}:{name}:{table}"

    def database_url(self, where: str) -> str:
        if self.url is not None:
            return self.url
        value = os.environ.get(self.url_env or "", "")
        if not value:
            raise KgragError(f"{where}: environment variable {self.url_env} (url_env) is not set")
        return value


def parse_table_source(entry: dict[str, Any], where: str) -> TableSource:
    """The entry as a :class:`TableSource`, or a one-line :class:`KgragError` naming ``where`` and the field."""
    try:
        return TableSource.model_validate(entry)
    except ValidationError as exc:
        first = exc.errors()[0]
        field_name = ".".join(map(str, first["loc"])) or "entry"
        raise KgragError(f"{where}: {field_name}: {first['msg']}") from None


@dataclass
class TableBatch:
    """What one read of a table gave: live rows as instances or links, tombstoned ids / links, and the largest
    incremental key seen (None when the table has no incremental column or no row was read)."""

    instances: list[Instance] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)
    deleted_ids: list[str] = field(default_factory=list)
    deleted_links: list[Link] = field(default_factory=list)
    high_water: Any = None
    rows: int = 0


def watermark_text(value: Any) -> str:
    """A watermark as stored (JSON text keeping its kind: int, float, text or an ISO timestamp/date)."""
    if isinstance(value, dt.datetime):
        return json.dumps({"datetime": value.isoformat()})
    if isinstance(value, dt.date):
        return json.dumps({"date": value.isoformat()})
    if isinstance(value, Decimal):
        return json.dumps({"decimal": str(value)})
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise KgragError(f"an incremental column must hold numbers, text, dates or timestamps, not {type(value).__name__}")
    return json.dumps(value)


def watermark_value(text: str) -> Any:
    """The inverse of :func:`watermark_text`."""
    value = json.loads(text)
    if isinstance(value, dict):
        if "datetime" in value:
            return dt.datetime.fromisoformat(value["datetime"])
        if "date" in value:
            return dt.date.fromisoformat(value["date"])
        if "decimal" in value:
            return Decimal(value["decimal"])
    return value


def widened(since: Any, lookback: float, where: str) -> Any:
    """``since`` moved back by ``lookback`` (seconds for timestamps and dates, units for numbers)."""
    if not lookback or since is None:
        return since
    if isinstance(since, dt.datetime):
        return since - dt.timedelta(seconds=lookback)
    if isinstance(since, dt.date):
        return since - dt.timedelta(days=math.ceil(lookback / 86400))
    if isinstance(since, bool) or not isinstance(since, int | float | Decimal):
        raise KgragError(f"{where}: lookback needs a number, date or timestamp incremental_column, "
                         f"not {type(since).__name__}")
    if isinstance(since, int):
        return since - math.ceil(lookback)
    return since - type(since)(str(lookback)) if isinstance(since, Decimal) else since - lookback


def _is_deleted(value: Any) -> bool:
    if value is None:
        return False
    if isinstance(value, bool | int | float | Decimal):
        return bool(value)
    if isinstance(value, str):
        return value.strip().lower() in _TRUE_TEXT
    return True  # a deleted_at timestamp


def _cell(value: Any, prop_type: str, where: str) -> Any:
    """A database value as a JSON-ready property value of the declared type."""
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() and prop_type.lower() in _INTEGER else float(value)
    if isinstance(value, bytes | bytearray | memoryview):
        raise KgragError(f"{where}: binary values cannot be properties")
    if isinstance(value, str):
        kind = prop_type.lower()
        try:
            if kind in _INTEGER:
                return int(value)
            if kind in _FLOAT:
                return float(value)
        except ValueError:
            raise KgragError(f"{where}: cannot read {value!r} as {prop_type}") from None
        if is_list_type(kind):
            text = value.strip()
            try:
                return json.loads(text) if text.startswith("[") else [v.strip() for v in text.split("|") if v.strip()]
            except json.JSONDecodeError:
                raise KgragError(f"{where}: cannot read {value!r} as {prop_type}") from None
    return value


class TableReader:
    """Reads one :class:`TableSource` (its engine opened on entry, disposed on exit)."""

    def __init__(self, source: TableSource, where: str) -> None:
        self.source = source
        self.where = where
        self._engine: Engine | None = None
        self._table: Table | None = None

    def __enter__(self) -> TableReader:
        url = self.source.database_url(self.where)
        try:
            self._engine = create_engine(url, pool_pre_ping=True)
            self._table = Table(self.source.table, MetaData(), schema=self.source.db_schema,
                                autoload_with=self._engine)
        except NoSuchTableError:
            self.close()
            raise KgragError(f"{self.where}: table {self.source.table!r} not found in the database") from None
        except (SQLAlchemyError, ValueError) as exc:
            self.close()
            reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
            raise KgragError(f"{self.where}: cannot read table {self.source.table!r}: {reason}") from None
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None

    @property
    def table(self) -> Table:
        if self._table is None:
            raise RuntimeError("TableReader used outside its with block")
        return self._table

    def column(self, name: str, what: str) -> Column:
        """The reflected column ``name`` (``what`` says which setting named it), else a KgragError."""
        if name not in self.table.c:
            known = ", ".join(c.name for c in self.table.columns)
            raise KgragError(f"{self.where}: {what} {name!r} is not a column of table {self.source.table!r} "
                             f"(columns: {known})")
        return self.table.c[name]

    def _property_columns(self, network: KnowledgeNetwork) -> list[tuple[str, str, Column]]:
        """``(property, type, column)`` of each declared property with a column; the display key must have one."""
        types = {ot.id: ot for ot in network.object_types}
        ot = types.get(self.source.object_type or "")
        if ot is None:
            raise KgragError(f"{self.where}: unknown object type {self.source.object_type!r}")
        declared = {p.name: p.type for p in ot.data_properties}
        for prop in self.source.columns:
            if prop not in declared:
                raise KgragError(f"{self.where}: columns maps {prop!r}, which is not a property of {ot.id}")
        out = []
        for prop, prop_type in declared.items():
            name = self.source.columns.get(prop, prop)
            if prop in self.source.columns:
                out.append((prop, prop_type, self.column(name, f"columns.{prop}")))
            elif name in self.table.c:
                out.append((prop, prop_type, self.table.c[name]))
        if ot.display_key not in {prop for prop, _, _ in out}:
            raise KgragError(f"{self.where}: object type {ot.id}'s display_key {ot.display_key!r} has no column in "
                             f"table {self.source.table!r} (map it with columns: {{{ot.display_key}: <column>}})")
        return out

    def max_key(self) -> Any:
        """The largest incremental key in the table now (None: no incremental column, or an empty table)."""
        if self.source.incremental_column is None:
            return None
        col = self.column(self.source.incremental_column, "incremental_column")
        with self._connect() as conn:
            return conn.execute(select(func.max(col))).scalar()

    def _connect(self):  # noqa: ANN202 - a SQLAlchemy Connection context
        assert self._engine is not None
        return self._engine.connect()

    def tombstoned(self, ids: list[str]) -> set[str]:
        """Which of ``ids`` are rows of this (instance) table marked deleted (empty without a deleted_column)."""
        if not ids or self.source.deleted_column is None or self.source.is_links:
            return set()
        key = self.column(self.source.id_column, "id_column")
        dead = self.column(self.source.deleted_column, "deleted_column")
        try:
            kind = key.type.python_type
        except NotImplementedError:
            kind = str
        typed: dict[Any, str] = {}
        for raw in ids:
            try:
                typed[kind(raw) if kind in (int, str) else raw] = raw
            except ValueError:
                continue  # "x" is no row of an integer key
        out: set[str] = set()
        keys = list(typed)
        with self._connect() as conn:
            for start in range(0, len(keys), 500):
                rows = conn.execute(select(key, dead).where(key.in_(keys[start:start + 500])))
                out.update(str(row[0]) for row in rows if _is_deleted(row[1]))
        return out

    def read(self, network: KnowledgeNetwork, since: Any = None) -> TableBatch:
        """Rows with an incremental key ``>= since`` (every row when ``since`` is None), split into live ones and
        tombstones; with ``since`` None tombstoned rows are simply skipped (nothing stored to delete is known)."""
        src = self.source
        inc = self.column(src.incremental_column, "incremental_column") if src.incremental_column else None
        dead = self.column(src.deleted_column, "deleted_column") if src.deleted_column else None
        if src.is_links:
            key_cols = [self.column(src.source_column, "source_column"), self.column(src.target_column, "target_column")]
            props: list[tuple[str, str, Column]] = []
        else:
            key_cols = [self.column(src.id_column, "id_column")]
            props = self._property_columns(network)
        extra = [c for c in (inc, dead) if c is not None]
        cols = [*key_cols, *(c for _, _, c in props), *extra]
        query = select(*cols)
        if since is not None:
            if inc is None:
                raise KgragError(f"{self.where}: an incremental read needs incremental_column")
            query = query.where(inc >= widened(since, src.lookback, self.where))
        batch = TableBatch()
        n_key, n_props = len(key_cols), len(props)
        try:
            with self._connect() as conn:
                result = conn.execute(query)
                for row in result:
                    self._take(batch, row, n_key, n_props, props, inc is not None, dead is not None)
        except SQLAlchemyError as exc:
            reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
            raise KgragError(f"{self.where}: reading table {src.table!r} failed: {reason}") from None
        return batch

    def _take(self, batch: TableBatch, row: Any, n_key: int, n_props: int, props: list[tuple[str, str, Column]],
              has_inc: bool, has_dead: bool) -> None:
        """Add one fetched row to ``batch`` (instances or links, live or tombstoned)."""
        src = self.source
        batch.rows += 1
        pos = n_key + n_props
        if has_inc:
            key = row[pos]
            if key is not None and (batch.high_water is None or key > batch.high_water):
                batch.high_water = key
            pos += 1
        deleted = has_dead and _is_deleted(row[pos])
        if src.is_links:
            source_id, target_id = row[0], row[1]
            if source_id is None or target_id is None:
                raise KgragError(f"{self.where}: table {src.table!r}: a link row has a NULL {src.source_column!r} "
                                 f"or {src.target_column!r}")
            link = Link(relation_type_id=src.relation_type or "", source_id=str(source_id), target_id=str(target_id))
            (batch.deleted_links if deleted else batch.links).append(link)
            return
        raw_id = row[0]
        if raw_id is None or raw_id == "":
            raise KgragError(f"{self.where}: table {src.table!r}: a row has no {src.id_column!r}")
        if deleted:
            batch.deleted_ids.append(str(raw_id))
            return
        where = f"{self.where}: table {src.table!r} row {src.id_column}={raw_id!r}"
        properties = {}
        for i, (prop, prop_type, _) in enumerate(props, n_key):
            value = row[i]
            if value is not None and value != "":
                properties[prop] = _cell(value, prop_type, f"{where} column {prop!r}")
        batch.instances.append(Instance(object_type_id=src.object_type or "", id=str(raw_id), properties=properties))

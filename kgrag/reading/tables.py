"""A knowledge network as columns in memory — what :mod:`kgrag.reading.execute` runs a
:class:`~kgrag.reading.table_plan.TablePlan` on and :mod:`kgrag.reading.linking` links values against.

    view = TableView.from_store(store, "pets_1")     # or TableView.build(network, instances, links)
    view.types["Pets"].column("weight")[:3]          # [12.0, 13.4, 9.3]

Contract: one :class:`TypeTable` per object type (its instance ids in id order, one list per data property,
a float array per number / date-like property, lower-cased strings per text property) and one pair of row-index
arrays per relation type (source rows, target rows: a link to an instance missing from the network is dropped).
A view is read once per network **version** (:func:`view_for` caches by ``(store, kn_id, version)``; a network
of over :data:`MAX_ROWS` instances has none), so a change to the network gives the next question a new view. Values are the stored ones; :func:`answer_text` writes a value
as an answer (integral numbers without decimals, whitespace collapsed).
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from kgrag.network.schema.model import Instance, KnowledgeNetwork, Link, ObjectType

__all__ = ["MAX_ROWS", "YEAR", "TableView", "TypeTable", "answer_text", "is_number_type", "number_text", "sortable", "view_for"]

#: the span of one year in :func:`sortable`'s ``YYYYMMDDhhmmss`` numbers (a year ``y`` starts at ``y * YEAR``)
YEAR = 10_000_000_000

_NUMBER_TYPES = frozenset({"integer", "int", "long", "short", "float", "double", "decimal", "number", "numeric"})
_DATE_TYPES = frozenset({"date", "datetime", "timestamp", "year", "gyear", "date-time"})
_SPACES = re.compile(r"\s+")


def is_number_type(prop_type: str) -> bool:
    return prop_type.lower() in _NUMBER_TYPES


def answer_text(value: Any) -> str:
    """A value as an answer string: ``18.0`` → ``"18"``, ``9.30`` → ``"9.3"``, text with runs of spaces collapsed."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int | float) and not (isinstance(value, float) and math.isnan(value)):
        return _number_form(float(value))
    return _SPACES.sub(" ", str(value)).strip()


def number_text(text: str, digits: int | None = None) -> str:
    """``text`` written as :func:`answer_text` writes a number when it is one ("18.0" → "18"; ``digits``: a
    fraction rounded to that many places), else unchanged — how answer sets compare numbers numerically."""
    try:
        number = float(text)
    except ValueError:
        return text
    if not math.isfinite(number):
        return text
    if digits is not None and not number.is_integer():
        return repr(round(number, digits))
    return _number_form(number)


def _number_form(number: float) -> str:
    return str(int(number)) if number.is_integer() and abs(number) < 1e16 else repr(number)


def _number(value: Any) -> float:
    if value is None or isinstance(value, bool):
        return math.nan
    if isinstance(value, int | float):
        return float(value)
    try:
        return float(str(value).strip())
    except ValueError:
        return math.nan


def sortable(value: Any) -> float:
    """A number for ordering: the value itself, else a date's ``YYYY-MM-DD…`` as a number (NaN when neither)."""
    number = _number(value)
    if not math.isnan(number) or value is None:
        return number
    digits = re.match(r"^(\d{4})(?:-(\d{1,2}))?(?:-(\d{1,2}))?(?:[ T](\d{1,2}):(\d{2})(?::(\d{2}))?)?", str(value))
    if digits is None:
        return math.nan
    parts = [int(p) if p else 0 for p in digits.groups()]
    return parts[0] * YEAR + ((parts[1] * 100 + parts[2]) * 100 + parts[3]) * 10000 + parts[4] * 100 + parts[5]


@dataclass
class TypeTable:
    """One object type's instances as columns."""

    type: ObjectType
    ids: list[str]
    values: dict[str, list[Any]]
    _numbers: dict[str, np.ndarray] = field(default_factory=dict)
    _lower: dict[str, list[str]] = field(default_factory=dict)
    _index: dict[str, dict[str, list[int]]] = field(default_factory=dict)
    _shapes: dict[str, tuple[float, float]] = field(default_factory=dict)
    _numeric: dict[str, bool] = field(default_factory=dict)
    _orderable: dict[str, bool] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def properties(self) -> list[str]:
        return [p.name for p in self.type.data_properties]

    def prop_type(self, name: str) -> str:
        found = next((p for p in self.type.data_properties if p.name == name), None)
        return found.type if found is not None else "string"

    def column(self, name: str) -> list[Any]:
        """The stored values of property ``name`` (``id``: the instance ids), one per row."""
        if name in self.values:
            return self.values[name]
        return list(self.ids) if name == "id" else [None] * len(self.ids)

    def numbers(self, name: str) -> np.ndarray:
        """The property as floats for comparing and ordering (dates as sortable numbers; NaN where not a number).
        In a column that holds dates, a bare year (``1879`` beside ``1867-11-07``) is that year's first day."""
        if name not in self._numbers:
            column = self.column(name)
            values = np.array([sortable(v) for v in column], dtype=float)
            plain = np.array([not math.isnan(_number(v)) for v in column], dtype=bool)
            if (~plain & ~np.isnan(values)).any():
                years = plain & (values >= 0) & (values < 10_000) & (values == np.floor(values))
                values[years] *= YEAR
            self._numbers[name] = values
        return self._numbers[name]

    def lower(self, name: str) -> list[str]:
        """The property as lower-cased, space-collapsed text ("" where missing)."""
        if name not in self._lower:
            self._lower[name] = ["" if v is None else answer_text(v).lower() for v in self.column(name)]
        return self._lower[name]

    def shape(self, name: str) -> tuple[float, float]:
        """(log mean length of the property's values, share of distinct values among the rows holding one);
        (0, 0) for an unknown or empty property."""
        if name not in self._shapes:
            present = [v for v in self.lower(name) if v] if name in self.properties else []
            self._shapes[name] = ((math.log1p(sum(map(len, present)) / len(present)),
                                   len(set(present)) / len(present)) if present else (0.0, 0.0))
        return self._shapes[name]

    def value_index(self, name: str) -> dict[str, list[int]]:
        """``{lower-cased value: rows}`` of property ``name``."""
        if name not in self._index:
            index: dict[str, list[int]] = {}
            for row, text in enumerate(self.lower(name)):
                if text:
                    index.setdefault(text, []).append(row)
            self._index[name] = index
        return self._index[name]

    def is_numeric(self, name: str) -> bool:
        """A number property, or one whose stored values are all numbers (a year stored as text); cached."""
        if name not in self._numeric:
            present = [v for v in self.column(name) if v not in (None, "")]
            self._numeric[name] = is_number_type(self.prop_type(name)) or (
                bool(present) and all(not math.isnan(_number(v)) for v in present))
        return self._numeric[name]

    def is_orderable(self, name: str) -> bool:
        """A number or a date (every stored value sorts as one); cached."""
        if name not in self._orderable:
            present = [v for v in self.column(name) if v not in (None, "")]
            self._orderable[name] = self.is_numeric(name) or self.prop_type(name).lower() in _DATE_TYPES or (
                bool(present) and all(not math.isnan(sortable(v)) for v in present))
        return self._orderable[name]


@dataclass
class TableView:
    """A network's types as :class:`TypeTable` s and its relation types as row-index pairs."""

    network: KnowledgeNetwork
    types: dict[str, TypeTable]
    #: relation id → (source rows, target rows)
    links: dict[str, tuple[np.ndarray, np.ndarray]]
    version: str = ""

    @classmethod
    def build(cls, network: KnowledgeNetwork, instances: Iterable[Instance | tuple[str, str, dict[str, Any]]],
              links: Iterable[Link | tuple[str, str, str]], version: str = "") -> TableView:
        """From a network's schema, instances and links (records or ``(type, id, properties)`` /
        ``(relation, source, target)`` tuples)."""
        rows: dict[str, list[tuple[str, dict[str, Any]]]] = {ot.id: [] for ot in network.object_types}
        for inst in instances:
            type_id, iid, props = ((inst.object_type_id, inst.id, inst.properties) if isinstance(inst, Instance)
                                   else inst)
            if type_id in rows:
                rows[type_id].append((iid, props))
        types: dict[str, TypeTable] = {}
        where: dict[str, tuple[str, int]] = {}
        for ot in network.object_types:
            found = sorted(rows[ot.id], key=lambda r: r[0])
            ids = [iid for iid, _ in found]
            values = {p.name: [props.get(p.name) for _, props in found] for p in ot.data_properties}
            types[ot.id] = TypeTable(ot, ids, values)
            for n, iid in enumerate(ids):
                where[iid] = (ot.id, n)
        ends = {rt.id: (rt.source_object_type_id, rt.target_object_type_id) for rt in network.relation_types}
        pairs: dict[str, tuple[list[int], list[int]]] = {rid: ([], []) for rid in ends}
        for link in links:
            rid, src, tgt = ((link.relation_type_id, link.source_id, link.target_id) if isinstance(link, Link)
                             else link)
            if rid not in ends:
                continue
            s, t = where.get(src), where.get(tgt)
            if s is None or t is None or s[0] != ends[rid][0] or t[0] != ends[rid][1]:
                continue
            pairs[rid][0].append(s[1])
            pairs[rid][1].append(t[1])
        arrays = {rid: (np.array(s, dtype=np.int64), np.array(t, dtype=np.int64)) for rid, (s, t) in pairs.items()}
        return cls(network, types, arrays, version)

    @classmethod
    def from_store(cls, store: Any, kn_id: str) -> TableView:
        """Every instance and link of ``kn_id`` read from a :class:`~kgrag.network.store.NetworkStore` (one
        statement each) at its current version."""
        from sqlalchemy import select

        from kgrag.network.schema import tables as t

        version = store.network_version(kn_id)
        network = store.get_network(kn_id)
        with store.engine.connect() as conn:
            inst = conn.execute(select(t.instances.c.object_type_id, t.instances.c.id, t.instances.c.properties)
                                .where(t.instances.c.kn_id == kn_id))
            instances = [(r.object_type_id, r.id, r.properties or {}) for r in inst]
            found = conn.execute(select(t.links.c.relation_type_id, t.links.c.source_id, t.links.c.target_id)
                                 .where(t.links.c.kn_id == kn_id))
            links = [(r.relation_type_id, r.source_id, r.target_id) for r in found]
        return cls.build(network, instances, links, version)

    @cached_property
    def ends(self) -> dict[str, tuple[str, str]]:
        """relation id → (source type, target type)."""
        return {rt.id: (rt.source_object_type_id, rt.target_object_type_id) for rt in self.network.relation_types}

    @cached_property
    def steps(self) -> dict[str, list[tuple[str, str, str]]]:
        """type → the ``(relation, "out" | "in", type reached)`` steps that start there."""
        out: dict[str, list[tuple[str, str, str]]] = {}
        for rid, (source, target) in self.ends.items():
            out.setdefault(source, []).append((rid, "out", target))
            out.setdefault(target, []).append((rid, "in", source))
        return out

    def relation_ends(self, relation: str) -> tuple[str, str]:
        return self.ends[relation]

    def walk(self, start_type: str, mask: np.ndarray, path: Sequence[tuple[str, str]]) -> tuple[str, np.ndarray]:
        """The rows reached from the ``mask`` rows of ``start_type`` along ``path`` (``(relation, "out"|"in")``
        hops): ``(the type reached, its row mask)``."""
        current, reached = start_type, mask
        for relation, direction in path:
            src, tgt = self.links[relation]
            source_type, target_type = self.relation_ends(relation)
            near, far, far_type = (src, tgt, target_type) if direction == "out" else (tgt, src, source_type)
            out = np.zeros(len(self.types[far_type]), dtype=bool)
            if len(near):
                out[far[reached[near]]] = True
            current, reached = far_type, out
        return current, reached


#: the most instances a network may have for its rows to be read into memory and planned over (per version)
MAX_ROWS = 300_000
#: (store, network) → (version, its view, or None when it has over MAX_ROWS instances)
_CACHE: dict[tuple[int, str], tuple[str, TableView | None]] = {}
_LOCK = threading.Lock()


def view_for(store: Any, kn_id: str) -> TableView | None:
    """The network's :class:`TableView` at its current version, or None over :data:`MAX_ROWS` instances (read — or
    counted — once per version and store)."""
    version = store.network_version(kn_id)
    key = (id(store), kn_id)
    with _LOCK:
        cached = _CACHE.get(key)
    if cached is not None and cached[0] == version:
        return cached[1]
    view = TableView.from_store(store, kn_id) if store.count_instances(kn_id) <= MAX_ROWS else None
    with _LOCK:
        _CACHE[key] = (version, view)
    return view

"""Queries over a loaded network: instances by condition or id (ordered by a property), counts, names, link
statistics, relation paths.

    queries = StoreQueries(core, StoreIndex(core)); queries.query_instances("medical", "Disease", None, 5)

Contract: :meth:`StoreQueries.query_instances` compiles a :class:`Condition` (:mod:`kgrag.network.schema.conditions`,
whose ``match``/``knn`` leaves are scored by :mod:`kgrag.network.store.index`) and returns scored hits first, by
score desc, then the rest by id; :meth:`StoreQueries.query_path` follows one relation type either way (interface 2
of contextual recall). :meth:`StoreQueries.instance_names`, the name scans built from them
(:meth:`StoreQueries.name_scans`) and :meth:`StoreQueries.link_cardinality` are cached per network version; on
SQLite, :meth:`StoreQueries.query_instances_by_type` answers ``contain`` on the display key from the name scans and
reads only the candidates' rows (the same hits as ``LIKE`` over every row). Unknown object types, fields, operations
and relation types raise ``ValueError``; an unknown network :class:`NetworkNotFound`.
"""

from __future__ import annotations

import json
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from sqlalchemy import Connection, func, select
from sqlalchemy.sql.elements import False_

from kgrag.network.schema import tables as t
from kgrag.network.schema.conditions import (
    NOT_TEXT,
    Plan,
    compile_condition,
    fold_ascii,
    is_list_type,
    order_expression,
    reads_name_column,
)
from kgrag.network.schema.model import Condition, InstanceHit, ObjectType, PathHit
from kgrag.network.store.core import StoreCore, driver_rows
from kgrag.network.store.index import StoreIndex

__all__ = ["BATCH_TYPES", "StoreQueries", "list_fields"]


class _Row(NamedTuple):
    id: str
    properties: Any


#: ids (or id pairs) one statement binds: under SQLite's oldest limit of 999 parameters
_IDS_PER_STATEMENT = 900


def _rows_by_id(conn: Connection, kn_id: str, type_id: str, ids: Sequence[str]) -> dict[str, _Row]:
    """``{id: (id, properties)}`` of the instances of one object type among ``ids`` (unknown ids absent); on SQLite
    a hot read (:func:`~kgrag.network.store.core.driver_rows`), its JSON decoded as the engine decodes it."""
    found: dict[str, _Row] = {}
    ti = t.instances
    chunks = [list(ids[start:start + _IDS_PER_STATEMENT]) for start in range(0, len(ids), _IDS_PER_STATEMENT)]
    if conn.dialect.name != "sqlite":
        for chunk in chunks:
            found.update((r.id, _Row(r.id, r.properties)) for r in conn.execute(select(ti.c.id, ti.c.properties)
                         .where(ti.c.kn_id == kn_id, ti.c.object_type_id == type_id, ti.c.id.in_(chunk))))
        return found
    loads = conn.dialect._json_deserializer or json.loads  # type: ignore[attr-defined]
    for chunk in chunks:
        sql = (f"SELECT id, properties FROM {ti.name} WHERE kn_id = ? AND object_type_id = ? "
               f"AND id IN ({', '.join('?' * len(chunk))})")  # our own table's name
        found.update((r[0], _Row(r[0], loads(r[1]) if r[1] is not None else None))
                     for r in driver_rows(conn, sql, [kn_id, type_id, *chunk]))
    return found


#: object types one statement of :meth:`StoreQueries.query_instances_by_type` covers
BATCH_TYPES = 400
#: the ``match`` / ``knn`` candidates a scored leaf contributes to an ordered or counted query (not the limit:
#: ordering and counting read every matching instance)
WHOLE_MATCH = 10_000


def _add_members(index: dict[str, list[str]], rows: Any) -> None:
    """Add ``(instance id, field value)`` rows to a :meth:`StoreQueries.list_members` index (a scalar value that
    is neither a string nor null goes under :data:`~kgrag.network.schema.conditions.NOT_TEXT`)."""
    for instance_id, value in rows:
        if value is not None and not isinstance(value, str | list):
            index.setdefault(NOT_TEXT, []).append(instance_id)
            continue
        for item in dict.fromkeys(value if isinstance(value, list) else [value]):
            if isinstance(item, str):
                index.setdefault(item, []).append(instance_id)


#: what separates two names in a :class:`NameScan`'s text (a keyword holding it is scanned name by name)
_SEP = "\x00"


@dataclass(frozen=True)
class NameScan:
    """One object type's instance names for substring search: ``ids`` in id order, ``text`` their ASCII-folded
    names (:func:`~kgrag.network.schema.conditions.fold_ascii`) joined by :data:`_SEP`, ``starts`` where each
    begins in ``text``."""

    ids: list[str]
    text: str
    starts: list[int]

    @classmethod
    def of(cls, ids: list[str], names: list[str]) -> NameScan:
        starts, at = [], 0
        for name in names:
            starts.append(at)
            at += len(name) + 1
        return cls(ids, _SEP.join(fold_ascii(name) for name in names), starts)

    def containing(self, items: Sequence[str]) -> Iterator[str]:
        """Ids, in id order, of the names holding every one of ``items`` (ASCII case ignored, as ``LIKE``)."""
        folded = [fold_ascii(item) for item in items]
        if not folded:
            yield from self.ids
            return
        first, rest = folded[0], folded[1:]
        if _SEP in first or not first:  # cannot be found across a separator: test name by name
            for i, start in enumerate(self.starts):
                name = self.text[start:self._end(i)]
                if all(f in name for f in folded):
                    yield self.ids[i]
            return
        at = self.text.find(first)
        while at >= 0:
            i = bisect_right(self.starts, at) - 1
            end = self._end(i)
            if not rest or all(f in self.text[self.starts[i]:end] for f in rest):
                yield self.ids[i]
            at = self.text.find(first, end + 1)

    def _end(self, i: int) -> int:
        """Where name ``i`` ends in ``text`` (its separator, or the end of the text)."""
        return self.starts[i + 1] - 1 if i + 1 < len(self.starts) else len(self.text)


def list_fields(ot: ObjectType) -> list[str]:
    """The names of an object type's list-valued data properties (``contain`` means membership there)."""
    return [p.name for p in ot.data_properties if is_list_type(p.type)]


class StoreQueries:
    """Instance, count, name, cardinality and path queries over ``core``'s database; ``index`` scores the
    ``match``/``knn`` leaves of conditions (see the module docstring)."""

    def __init__(self, core: StoreCore, index: StoreIndex) -> None:
        self.core = core
        self.index = index
        self._names: dict[str, tuple[str, list[tuple[str, str, str]]]] = {}
        self._cardinality: dict[str, tuple[str, dict[str, tuple[int, int, int]]]] = {}
        self._members: dict[tuple[str, str, str], tuple[str, dict[str, list[str]]]] = {}
        self._scans: dict[str, tuple[str, dict[str, NameScan]]] = {}

    # ------------------------------------------------------------------ instances
    def compile(
        self, kn_id: str, object_type_id: str, condition: Condition | None, limit: int
    ) -> Plan | None:
        """The compiled plan of ``condition`` (raises ``ValueError`` for unknown fields/operations)."""
        version, ot = self.core.object_type(kn_id, object_type_id)
        if condition is None:
            return None
        return compile_condition(
            condition,
            ot,
            dialect=self.core.dialect,
            default_limit=limit,
            match=lambda type_id, fields, q, k: self.index.match_scores(kn_id, "instance", type_id, fields, q, k),
            knn=lambda type_id, fields, q, k: self.index.knn_scores(
                kn_id, "instance", type_id, fields, q, k, version=version
            ),
            members=lambda type_id, field_name: self.list_members(kn_id, type_id, field_name),
        )

    def list_members(self, kn_id: str, object_type_id: str, field_name: str) -> dict[str, list[str]]:
        """``{string item: ids of the instances of the type whose field holds it}`` of one list field (a scalar
        string value counts as its one item), read in one scan and cached per network version: ``contain`` on a
        list field then tests only the rows holding the item (an alias lookup read every row's JSON: 45 ms on the
        medical Disease type, whose rows hold long texts)."""
        version = self.core.schema(kn_id)[0]
        key = (kn_id, object_type_id, field_name)
        cached = self._members.get(key)
        if cached is not None and cached[0] == version:
            return cached[1]
        ti = t.instances
        index = self._members_moved_forward(kn_id, version, object_type_id, field_name, cached) if cached else None
        if index is None:
            index = {}
            with self.core.engine.connect() as conn:
                rows = conn.execute(select(ti.c.id, ti.c.properties[field_name]).where(
                    ti.c.kn_id == kn_id, ti.c.object_type_id == object_type_id))
                _add_members(index, rows)
        with self.core.lock:  # one entry per field: an older version's is replaced (or moved forward) on use
            self._members[key] = (version, index)
        return index

    def _members_moved_forward(self, kn_id: str, version: str, object_type_id: str, field_name: str,
                               cached: tuple[str, dict[str, list[str]]]) -> dict[str, list[str]] | None:
        """The cached item index moved to ``version`` by the one change that led there: the touched instances'
        ids dropped, their current values read back (:meth:`StoreCore.touched_since`); None when none leads
        there."""
        touched = self.core.touched_since(kn_id, cached[0], version)
        if touched is None:
            return None
        ids = sorted({item_id for type_id, item_id in touched if type_id == object_type_id})
        if not ids:
            return cached[1]
        ti = t.instances
        with self.core.engine.connect() as conn:
            rows = [tuple(r) for start in range(0, len(ids), 500) for r in conn.execute(
                select(ti.c.id, ti.c.properties[field_name]).where(
                    ti.c.kn_id == kn_id, ti.c.object_type_id == object_type_id, ti.c.id.in_(ids[start:start + 500])))]
            if self.core._version(conn, kn_id) != version:
                return None
        gone = set(ids)
        index: dict[str, list[str]] = {}
        for item, holders in cached[1].items():
            kept = [h for h in holders if h not in gone]
            if kept:
                index[item] = kept
        _add_members(index, rows)
        return index

    def warm_list_members(self, kn_id: str) -> int:
        """Build :meth:`list_members` of every list property of every object type of ``kn_id`` (what the first
        ``contain`` on each would build: 0.1–0.2 s a field on the medical network); returns the fields indexed."""
        fields = [(ot.id, name) for ot in self.core.get_network(kn_id).object_types for name in list_fields(ot)]
        for type_id, field_name in fields:
            self.list_members(kn_id, type_id, field_name)
        return len(fields)

    @staticmethod
    def _hit(object_type_id: str, row: Any, score: float | None) -> InstanceHit:
        return InstanceHit(object_type_id=object_type_id, id=row.id, properties=row.properties, score=score)

    def query_instances(
        self,
        kn_id: str,
        object_type_id: str,
        condition: Condition | None,
        limit: int,
        sort_by_score: bool = True,
        scored_limit: int | None = None,
    ) -> list[InstanceHit]:
        """Instances of ``object_type_id`` matching ``condition``, at most ``limit``.

        Scored results (a knn/match leaf) come first, by score desc (ties by id), then rows that matched only
        through unscored branches (by id). Without a scored leaf the order is by id. ``scored_limit``: only the
        first ``scored_limit`` scored results are returned (and their rows read) — the unscored rows after them are
        those of the whole answer, so a caller keeping the best few of the answer (kn_search keeps 5 of 50) reads
        the rows it keeps. Raises ``ValueError`` for an unknown object type, field or operation and
        :class:`NetworkNotFound` for an unknown network.
        """
        plan = self.compile(kn_id, object_type_id, condition, limit)
        if limit <= 0:
            return []
        ti = t.instances
        base = select(ti.c.id, ti.c.properties).where(
            ti.c.kn_id == kn_id, ti.c.object_type_id == object_type_id
        )
        if plan is None:
            with self.core.engine.connect() as conn:
                rows = conn.execute(base.order_by(ti.c.id).limit(limit)).all()
            return [self._hit(object_type_id, r, None) for r in rows]
        # what rows outside the scored candidates must satisfy; None: no such row can match
        rest_clause = None if isinstance(plan.rest_clause, False_) else plan.rest_clause
        with self.core.engine.connect() as conn:
            if not plan.scores:  # every row is outside the scored candidates: the rest clause is exact
                if rest_clause is None:
                    return []
                rows = conn.execute(base.where(rest_clause).order_by(ti.c.id).limit(limit)).all()
                return [self._hit(object_type_id, r, None) for r in rows]
            scored_ids = sorted(plan.scores)
            # ids first (no JSON decoding), then the properties of the best ``limit`` only
            ok = list(scored_ids) if plan.candidates_match else [r.id for r in conn.execute(
                select(ti.c.id).where(ti.c.kn_id == kn_id, ti.c.object_type_id == object_type_id, plan.clause,
                                      ti.c.id.in_(scored_ids)))]
            ok.sort(key=(lambda i: (-plan.scores[i], i)) if sort_by_score else None)
            top = ok[:limit]
            kept = top if scored_limit is None else top[:max(scored_limit, 0)]
            # the clause was just checked for these ids: read their rows by primary key alone
            by_id = _rows_by_id(conn, kn_id, object_type_id, kept) if kept else {}
            hits = [self._hit(object_type_id, by_id[i], plan.scores[i]) for i in kept if i in by_id]
            filled = len(top) - (len(kept) - len(hits))  # a kept id whose row is gone leaves its place to the rest
            if filled < limit and rest_clause is not None:
                # the scored ids are dropped here, not by a NOT IN of them (the rest clause — kn_search's ``==``
                # of the query — rarely holds a row: the statement is the cost)
                scored = set(scored_ids)
                rest = conn.execute(base.where(rest_clause).order_by(ti.c.id).limit(limit - filled + len(scored)))
                hits.extend([self._hit(object_type_id, r, None) for r in rest if r.id not in scored][:limit - filled])
        return hits

    def ordered_instances(self, kn_id: str, object_type_id: str, condition: Condition | None, order_by: str,
                          descending: bool, limit: int) -> list[InstanceHit]:
        """The first ``limit`` instances of ``object_type_id`` matching ``condition``, by ``order_by``'s typed value
        (ascending, or ``descending``); instances without a value come last, ties by id — the same on SQLite and
        PostgreSQL. ``ValueError`` for an unknown field or one without an order (a list, a boolean)."""
        _, ot = self.core.object_type(kn_id, object_type_id)
        key = order_expression(ot, order_by, self.core.dialect)
        plan = self.compile(kn_id, object_type_id, condition, WHOLE_MATCH)
        if limit <= 0:
            return []
        ti = t.instances
        stmt = select(ti.c.id, ti.c.properties).where(ti.c.kn_id == kn_id, ti.c.object_type_id == object_type_id)
        if plan is not None:
            stmt = stmt.where(plan.clause)
        stmt = stmt.order_by(key.is_(None), key.desc() if descending else key.asc(), ti.c.id).limit(limit)
        with self.core.engine.connect() as conn:
            rows = conn.execute(stmt).all()
        scores = plan.scores if plan is not None else {}
        return [self._hit(object_type_id, r, scores.get(r.id)) for r in rows]

    def ranked_by_links(self, kn_id: str, object_type_id: str, condition: Condition | None, relation_type_id: str,
                        forward: bool, descending: bool, limit: int) -> list[tuple[InstanceHit, int]]:
        """``(instance, links)`` of the first ``limit`` instances of ``object_type_id`` matching ``condition``, by
        how many ``relation_type_id`` links they have (as the link's source when ``forward``, else as its target;
        ``descending``: the most first), ties by id; instances without such a link are left out. One grouped
        statement (the counts grouped in a subquery: the same on SQLite and PostgreSQL). ``ValueError`` for an
        unknown type, field or operation."""
        self.core.object_type(kn_id, object_type_id)
        plan = self.compile(kn_id, object_type_id, condition, WHOLE_MATCH)
        if limit <= 0:
            return []
        ti, tl = t.instances, t.links
        near = tl.c.source_id if forward else tl.c.target_id
        counts = (select(near.label("near"), func.count().label("n"))
                  .where(tl.c.kn_id == kn_id, tl.c.relation_type_id == relation_type_id)
                  .group_by(near).subquery())
        stmt = (select(ti.c.id, ti.c.properties, counts.c.n).join(counts, counts.c.near == ti.c.id)
                .where(ti.c.kn_id == kn_id, ti.c.object_type_id == object_type_id))
        if plan is not None:
            stmt = stmt.where(plan.clause)
        stmt = stmt.order_by(counts.c.n.desc() if descending else counts.c.n.asc(), ti.c.id).limit(limit)
        with self.core.engine.connect() as conn:
            rows = conn.execute(stmt).all()
        scores = plan.scores if plan is not None else {}
        return [(self._hit(object_type_id, r, scores.get(r.id)), int(r.n)) for r in rows]

    def count_matching(self, kn_id: str, object_type_id: str, condition: Condition | None) -> int:
        """How many instances of ``object_type_id`` match ``condition`` (all of them for None), counted in SQL;
        ``ValueError`` for an unknown type, field or operation."""
        plan = self.compile(kn_id, object_type_id, condition, WHOLE_MATCH)
        ti = t.instances
        stmt = select(func.count()).select_from(ti).where(ti.c.kn_id == kn_id, ti.c.object_type_id == object_type_id)
        if plan is not None:
            stmt = stmt.where(plan.clause)
        with self.core.engine.connect() as conn:
            return int(conn.execute(stmt).scalar() or 0)

    def query_instances_by_type(
        self, kn_id: str, conditions: dict[str, Condition], limit: int
    ) -> dict[str, list[InstanceHit]]:
        """:meth:`query_instances` with ``sort_by_score=False`` — the first ``limit`` matching rows by id — for
        many (object type, unscored leaf condition) pairs: types whose leaf compiles to the same SQL (the same
        operation, field, value, field type and display-key role: the clause never names the type) share one
        statement, ranked per type by a window. A ``contain`` on a list field (its clause binds the type's own
        holders) and any other condition run on their own. Unknown types or fields raise ``ValueError``."""
        out: dict[str, list[InstanceHit]] = {tid: [] for tid in conditions}
        if limit <= 0 or not conditions:
            return out
        groups: dict[tuple, tuple[Condition, ObjectType, list[str]]] = {}
        for type_id, cond in conditions.items():
            _, ot = self.core.object_type(kn_id, type_id)
            prop = next((p for p in ot.data_properties if p.name == cond.field), None)
            if cond.operation in ("and", "or", "match", "knn") or (prop is not None and is_list_type(prop.type)):
                out[type_id] = self.query_instances(kn_id, type_id, cond, limit, sort_by_score=False)
                continue
            key = (cond.operation, cond.field, repr(cond.value), prop.type if prop else None,
                   cond.field == ot.display_key)
            groups.setdefault(key, (cond, ot, []))[2].append(type_id)
        ti = t.instances
        rank = func.row_number().over(partition_by=ti.c.object_type_id, order_by=ti.c.id)
        with self.core.engine.connect() as conn:
            for cond, ot, type_ids in groups.values():
                if cond.operation == "contain" and self.core.dialect == "sqlite" and reads_name_column(ot, cond.field
                                                                                                      or ""):
                    out.update(self._names_containing(conn, kn_id, type_ids, cond, limit))
                    continue
                plan = self.compile(kn_id, ot.id, cond, limit)
                assert plan is not None and not plan.scored  # a leaf without match/knn
                if isinstance(plan.clause, False_):
                    continue
                for start in range(0, len(type_ids), BATCH_TYPES):
                    chunk = type_ids[start:start + BATCH_TYPES]
                    inner = select(ti.c.object_type_id, ti.c.id, ti.c.properties, rank.label("rank")).where(
                        ti.c.kn_id == kn_id, ti.c.object_type_id.in_(chunk), plan.clause).subquery()
                    rows = conn.execute(select(inner.c.object_type_id, inner.c.id, inner.c.properties)
                                        .where(inner.c.rank <= limit).order_by(inner.c.object_type_id, inner.c.id))
                    for row in rows:
                        out[row.object_type_id].append(self._hit(row.object_type_id, row, None))
        return out

    def name_scans(self, kn_id: str) -> dict[str, NameScan]:
        """``{object type id: its NameScan}`` built from :meth:`instance_names`, once per network version."""
        version = self.core.schema(kn_id)[0]
        cached = self._scans.get(kn_id)
        if cached is not None and cached[0] == version:
            return cached[1]
        by_type: dict[str, tuple[list[str], list[str]]] = {}
        for type_id, instance_id, name in self.instance_names(kn_id):  # by (type, id)
            ids, names = by_type.setdefault(type_id, ([], []))
            ids.append(instance_id)
            names.append(name or "")
        scans = {type_id: NameScan.of(ids, names) for type_id, (ids, names) in by_type.items()}
        with self.core.lock:
            self._scans[kn_id] = (version, scans)
        return scans

    def _names_containing(self, conn: Any, kn_id: str, type_ids: list[str], cond: Condition, limit: int
                          ) -> dict[str, list[InstanceHit]]:
        """``contain`` on the display key (the ``name`` column) for many types, as the SQL of
        :meth:`query_instances_by_type` answers it — the first ``limit`` instances by id whose name holds every
        item (ASCII case ignored) and whose field is present — without reading every row: the candidates come
        from the per-version :meth:`name_scans`, and only their rows are read, in id order, until ``limit`` of
        each type are found. Each row read is checked again as it is now (a name changed since is not taken)."""
        items = [str(v) for v in (cond.value if isinstance(cond.value, list | tuple) else [cond.value])]
        folded = [fold_ascii(item) for item in items]
        field_name = cond.field or ""
        scans = self.name_scans(kn_id)
        out: dict[str, list[InstanceHit]] = {tid: [] for tid in type_ids}
        pending = {tid: scans[tid].containing(items) for tid in type_ids if tid in scans}
        ti = t.instances
        while pending:
            wanted: list[tuple[str, str]] = []
            for tid in list(pending):
                chunk = [i for _, i in zip(range(limit - len(out[tid])), pending[tid], strict=False)]
                if not chunk:
                    del pending[tid]
                wanted += [(tid, i) for i in chunk]
            rows: dict[tuple[str, str], Any] = {}
            for start in range(0, len(wanted), _IDS_PER_STATEMENT):
                part = wanted[start:start + _IDS_PER_STATEMENT]
                for r in conn.execute(select(ti.c.object_type_id, ti.c.id, ti.c.name, ti.c.properties).where(
                        ti.c.kn_id == kn_id, ti.c.object_type_id.in_(sorted({tid for tid, _ in part})),
                        ti.c.id.in_(sorted({i for _, i in part})))):
                    rows[(r.object_type_id, r.id)] = r
            for key in wanted:
                r = rows.get(key)
                if (r is not None and r.properties.get(field_name) is not None
                        and all(f in fold_ascii(r.name) for f in folded)):
                    out[key[0]].append(self._hit(key[0], r, None))
            for tid in [tid for tid in pending if len(out[tid]) >= limit]:
                del pending[tid]
        return out

    def scored_instances_by_type(
        self, kn_id: str, scores: dict[str, dict[str, float]], limit: int
    ) -> dict[str, list[InstanceHit]]:
        """What :meth:`query_instances` returns for a lone ``match`` / ``knn`` leaf, given each type's scores
        ``{type: {id: score}}``: the best ``limit`` by (score desc, id) with their rows — read in one statement
        for all the types."""
        top = {tid: sorted(found, key=lambda i: (-found[i], i))[:limit] for tid, found in scores.items()}
        wanted = sorted({i for ids in top.values() for i in ids})
        if not wanted:
            return {tid: [] for tid in top}
        rows: dict[tuple[str, str], Any] = {}
        ti = t.instances
        with self.core.engine.connect() as conn:
            for start in range(0, len(wanted), _IDS_PER_STATEMENT):
                for r in conn.execute(select(ti.c.object_type_id, ti.c.id, ti.c.properties).where(
                        ti.c.kn_id == kn_id, ti.c.object_type_id.in_(sorted(top)),
                        ti.c.id.in_(wanted[start:start + _IDS_PER_STATEMENT]))):
                    rows[(r.object_type_id, r.id)] = r
        return {tid: [self._hit(tid, rows[(tid, i)], scores[tid][i]) for i in ids if (tid, i) in rows]
                for tid, ids in top.items()}

    def get_instances(self, kn_id: str, object_type_id: str, ids: Sequence[str]) -> list[InstanceHit]:
        """Instances by id (in the order given; unknown ids are skipped)."""
        self.core.object_type(kn_id, object_type_id)
        with self.core.engine.connect() as conn:
            found = _rows_by_id(conn, kn_id, object_type_id, ids)
        return [self._hit(object_type_id, found[i], None) for i in ids if i in found]

    def sample_instance(self, kn_id: str, object_type_id: str) -> dict | None:
        """The properties of the instance with the smallest id (deterministic), or None when there is none."""
        self.core.object_type(kn_id, object_type_id)
        ti = t.instances
        with self.core.engine.connect() as conn:
            row = conn.execute(
                select(ti.c.properties)
                .where(ti.c.kn_id == kn_id, ti.c.object_type_id == object_type_id)
                .order_by(ti.c.id)
                .limit(1)
            ).first()
        return dict(row.properties) if row is not None else None

    def count_instances(self, kn_id: str, object_type_id: str | None = None) -> int:
        ti = t.instances
        stmt = select(func.count()).select_from(ti).where(ti.c.kn_id == kn_id)
        if object_type_id is not None:
            stmt = stmt.where(ti.c.object_type_id == object_type_id)
        with self.core.engine.connect() as conn:
            return int(conn.execute(stmt).scalar() or 0)

    def instance_names(self, kn_id: str) -> list[tuple[str, str, str]]:
        """``(object_type_id, instance id, name)`` of every instance (``name`` = the display-key value), cached
        per network version: the dictionary contextual recall segments questions with. By (type, id)."""
        version = self.core.schema(kn_id)[0]
        cached = self._names.get(kn_id)
        if cached is not None and cached[0] == version:
            return cached[1]
        ti = t.instances
        rows = self._names_moved_forward(kn_id, version, cached) if cached is not None else None
        if rows is None:
            with self.core.engine.connect() as conn:
                rows = [(r[0], r[1], r[2]) for r in conn.execute(
                    select(ti.c.object_type_id, ti.c.id, ti.c.name).where(ti.c.kn_id == kn_id)
                    .order_by(ti.c.object_type_id, ti.c.id))]
        with self.core.lock:
            self._names[kn_id] = (version, rows)
        return rows

    def _names_moved_forward(self, kn_id: str, version: str, cached: tuple[str, list[tuple[str, str, str]]]
                             ) -> list[tuple[str, str, str]] | None:
        """The cached names moved to ``version`` by the one change that led there (only the touched instances'
        names read: :meth:`StoreCore.touched_since`), in the same (type, id) order; None when none leads there."""
        touched = self.core.touched_since(kn_id, cached[0], version)
        if touched is None:
            return None
        ti = t.instances
        by_type: dict[str, list[str]] = {}
        for type_id, item_id in touched:
            by_type.setdefault(type_id, []).append(item_id)
        with self.core.engine.connect() as conn:
            fresh = [(r[0], r[1], r[2]) for type_id, ids in by_type.items() for start in range(0, len(ids), 500)
                     for r in conn.execute(select(ti.c.object_type_id, ti.c.id, ti.c.name).where(
                         ti.c.kn_id == kn_id, ti.c.object_type_id == type_id, ti.c.id.in_(ids[start:start + 500])))]
            if self.core._version(conn, kn_id) != version:
                return None
        gone = set(touched)
        return sorted([row for row in cached[1] if (row[0], row[1]) not in gone] + fresh,
                      key=lambda row: (row[0], row[1]))

    def link_cardinality(self, kn_id: str, relation_type_id: str) -> tuple[int, int, int]:
        """``(most targets of one source, most sources of one target, links)`` of one relation type. Computed for
        every relation of the network at once (two grouped scans of the link indexes) and cached per version."""
        version = self.core.schema(kn_id)[0]
        cached = self._cardinality.get(kn_id)
        if cached is None or cached[0] != version:
            tl = t.links
            stats: dict[str, list[int]] = {}
            with self.core.engine.connect() as conn:
                for end, column in ((0, tl.c.source_id), (1, tl.c.target_id)):
                    per = (select(tl.c.relation_type_id.label("rid"), func.count().label("n"))
                           .where(tl.c.kn_id == kn_id).group_by(tl.c.relation_type_id, column).subquery())
                    for rid, most, total in conn.execute(
                            select(per.c.rid, func.max(per.c.n), func.sum(per.c.n)).group_by(per.c.rid)):
                        entry = stats.setdefault(rid, [0, 0, 0])
                        entry[end], entry[2] = int(most), int(total)
            cached = (version, {rid: (v[0], v[1], v[2]) for rid, v in stats.items()})
            with self.core.lock:
                self._cardinality[kn_id] = cached
        return cached[1].get(relation_type_id, (0, 0, 0))

    def count_links(self, kn_id: str, relation_type_id: str | None = None) -> int:
        tl = t.links
        stmt = select(func.count()).select_from(tl).where(tl.c.kn_id == kn_id)
        if relation_type_id is not None:
            stmt = stmt.where(tl.c.relation_type_id == relation_type_id)
        with self.core.engine.connect() as conn:
            return int(conn.execute(stmt).scalar() or 0)

    # ------------------------------------------------------------------ relation paths (interface 2)
    def linked_ids(self, kn_id: str, relation_type_id: str, ids: Sequence[str], forward: bool
                   ) -> list[tuple[str, str]]:
        """``(near, far)`` instance ids linked by ``relation_type_id`` where ``near`` is one of ``ids``: near is the
        link's source when ``forward``, else its target. Ordered by (near, far), the same on every backend; ids
        bound in chunks (each chunk's rows in that order)."""
        tl = t.links
        near, far = (tl.c.source_id, tl.c.target_id) if forward else (tl.c.target_id, tl.c.source_id)
        out: list[tuple[str, str]] = []
        with self.core.engine.connect() as conn:
            for start in range(0, len(ids), _IDS_PER_STATEMENT):
                chunk = list(ids[start : start + _IDS_PER_STATEMENT])
                out.extend((r[0], r[1]) for r in conn.execute(select(near, far).where(
                    tl.c.kn_id == kn_id, tl.c.relation_type_id == relation_type_id, near.in_(chunk))
                    .order_by(near, far)))
        return out

    def query_path(
        self,
        kn_id: str,
        source_type: str,
        source_condition: Condition | None,
        relation_type_id: str,
        target_type: str,
        target_condition: Condition | None,
        limit_per_type: int = 10,
    ) -> list[PathHit]:
        """Instances connected by one relation: ``source_type --relation--> target_type`` where each end
        satisfies its condition (``None`` = any).

        The relation may be traversed either way: ``source_type``/``target_type`` may name the relation's target
        and source types, and each :class:`PathHit` reports the link in the relation's own direction. The
        ``source_type`` side is resolved first (at most ``limit_per_type`` instances, best scored first); then
        the linked instances of ``target_type`` that satisfy ``target_condition`` (at most ``limit_per_type``
        distinct ones, best first). Returns at most ``limit_per_type`` paths per source instance.
        """
        _, network, ots = self.core.schema(kn_id)
        rt = next((r for r in network.relation_types if r.id == relation_type_id), None)
        if rt is None:
            raise ValueError(f"unknown relation type {relation_type_id!r} in network {kn_id!r}")
        for type_id in (source_type, target_type):
            if type_id not in ots:
                raise ValueError(f"unknown object type {type_id!r} in network {kn_id!r}")
        if (rt.source_object_type_id, rt.target_object_type_id) == (source_type, target_type):
            forward = True
        elif (rt.source_object_type_id, rt.target_object_type_id) == (target_type, source_type):
            forward = False
        else:
            raise ValueError(
                f"relation type {relation_type_id!r} links {rt.source_object_type_id!r} -> "
                f"{rt.target_object_type_id!r}, not {source_type!r} and {target_type!r}"
            )
        sources = self.query_instances(kn_id, source_type, source_condition, limit_per_type)
        if not sources:
            return []
        neighbours: dict[str, list[str]] = {}
        for near_id, far_id in self.linked_ids(kn_id, relation_type_id, [s.id for s in sources], forward):
            neighbours.setdefault(near_id, []).append(far_id)
        far_ids = sorted({f for fs in neighbours.values() for f in fs})
        if not far_ids:
            return []
        id_filter = Condition(operation="in", field="id", value=far_ids)
        cond = (
            id_filter
            if target_condition is None
            else Condition(operation="and", sub_conditions=[id_filter, target_condition])
        )
        targets = {
            h.id: h for h in self.query_instances(kn_id, target_type, cond, max(limit_per_type, 1) * 10)
        }
        rank = {tid: i for i, tid in enumerate(targets)}
        paths: list[PathHit] = []
        for src in sources:
            linked = sorted(
                (f for f in set(neighbours.get(src.id, [])) if f in targets), key=rank.__getitem__
            )
            for tid in linked[:limit_per_type]:
                tgt = targets[tid]
                a, b = (src, tgt) if forward else (tgt, src)
                paths.append(PathHit(source=a, relation_type_id=relation_type_id, target=b))
        return paths

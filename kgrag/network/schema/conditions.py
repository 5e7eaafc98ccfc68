"""Compile a :class:`~kgrag.network.schema.model.Condition` tree into SQL (bound parameters only) plus scored
candidates.

A leaf ``field op value`` over an instance's JSON ``properties`` becomes a SQLAlchemy expression (``json_extract``
on SQLite, ``->>`` on PostgreSQL, via SQLAlchemy's portable JSON accessors); values are always bound parameters,
so a value such as ``'; DROP TABLE kn_instances; --`` is just a string that matches nothing.

Operations (the value is coerced to the property's declared type: integer/float types compare as numbers,
boolean as booleans, everything else as strings):

==========  ==========================================================================================
``==``      equal; ``!=`` not equal (an instance without the property counts as not equal)
``in``      value is a list; equal to one of them (an empty list matches nothing)
``contain`` substring of a string property; membership in a list property (type ``list``/``array``/``…[]``);
            a list value means "contains every item"
``like``    SQL ``LIKE`` pattern (``%`` and ``_``); ``prefix`` starts with (``%``/``_`` in the value are literal)
``regex``   Python ``re.search`` (SQLite: a ``REGEXP`` function registered on every connection)
``exist``   the property is present and not null (``value: false`` inverts)
``range``   ``value=[low, high]``, both inclusive, ``null`` for an open end
``> >= < <=`` comparisons
``match``   full-text over the jieba/ASCII tokens of the field(s) (FTS5 ``bm25``), scored in (0, 1]
``knn``     cosine nearest neighbours of the query's embedding, top ``limit`` per condition, scored in [0, 1]
``and/or``  nesting; ``field="*"`` with match/knn means every field of the type that declares that operation
==========  ==========================================================================================

Fields: the data properties of the object type, plus ``id`` (the instance id) when no property is called so.
``match``/``knn`` need an index, so the field must declare that operation in ``condition_operations``; other
operations work on every data property. An unknown field or operation raises ``ValueError`` naming it.

PostgreSQL gives the same answers as SQLite: ``like``/``contain``/``prefix`` fold ASCII letters as SQLite's
``LIKE`` does (``translate`` of A-Z on both sides); a numeric or boolean field compares only JSON numbers or
booleans (another value is NULL there, never a cast error); ``contain`` on a list uses ``jsonb @>`` (a scalar
value counts as a one-item list, as ``json_each`` has it). ``regex`` runs PostgreSQL's regular expressions
(ARE: digit classes, lookahead and the common syntax agree with Python's ``re``; ``(?P<name>…)`` is Python's
only).

Scores: a ``match``/``knn`` leaf yields candidate ids with scores; the SQL clause restricts rows to those ids.
``or`` unions candidates (max score), ``and`` intersects them (score = max of the children's scores). Rows that
satisfy the tree only through unscored branches carry ``score=None`` (sorted after scored rows).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from sqlalchemy import and_, case, cast, exists, false, func, literal, null, or_, select, true
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.sql.elements import ColumnElement

from kgrag.network.schema.model import TEXT_TYPES, Condition, DataProperty, ObjectType
from kgrag.network.schema.tables import instances

__all__ = [
    "LEAF_OPERATIONS",
    "SCORED_OPERATIONS",
    "Plan",
    "compile_condition",
    "fold_ascii",
    "is_list_type",
    "reads_name_column",
    "order_expression",
    "scored_leaves",
    "validate_condition",
]

SCORED_OPERATIONS = frozenset({"match", "knn"})
LEAF_OPERATIONS = (
    frozenset(
        {"==", "!=", "in", "contain", "like", "prefix", "regex", "exist", "range", ">", ">=", "<", "<="}
    )
    | SCORED_OPERATIONS
)
_NUMERIC_TYPES = frozenset(
    {"integer", "int", "long", "short", "float", "double", "decimal", "number", "numeric"}
)
_BOOL_TYPES = frozenset({"boolean", "bool"})
_LIST_ONLY_OPS = frozenset({"contain", "exist"})

#: (object_type_id, fields, query, limit) -> {instance id: score}
Scorer = Callable[[str, list[str], str, int], dict[str, float]]
#: (object_type_id, list field) -> {item: ids of the instances whose list holds it}: an index for ``contain``
Members = Callable[[str, str], dict[str, list[str]]]
#: more instances than this holding one list item: ``contain`` scans instead of binding their ids
MAX_MEMBER_IDS = 500
#: the :data:`Members` key of the instances whose value of a field is a scalar other than a string (a number,
#: a boolean): ``==`` on such a field is left to the database (PostgreSQL reads them as text)
NOT_TEXT = "\x00not text"


def is_list_type(prop_type: str) -> bool:
    t = prop_type.lower()
    return t in {"list", "array"} or t.endswith("[]") or t.startswith(("list<", "array<"))


@dataclass
class Plan:
    """A compiled condition: rows must satisfy ``clause``; ``scores`` holds the scored candidates' scores.

    ``clause`` may be given as a function that makes it, called on first use: a scored leaf's ``id IN`` (its
    candidates) is needed only where the database checks the clause, which an ``or`` of scored leaves never asks
    (``candidates_match``) — kn_search's condition built some twenty 50-id lists a query for nothing."""

    make_clause: ColumnElement[bool] | Callable[[], ColumnElement[bool]]
    #: what ``clause`` says of the rows *outside* ``scores`` (None: no such row can match). A scored leaf with
    #: only ``or`` above it has no candidate outside them (they are all in the union), so it is false there:
    #: what is left is the unscored leaves — usually an indexed equality instead of a scan testing every row of
    #: the type against id lists.
    rest_clause: ColumnElement[bool] | None
    scores: dict[str, float] = field(default_factory=dict)
    scored: bool = False  # the tree has a match/knn leaf (even one that found nothing)
    #: every candidate in ``scores`` satisfies ``clause`` (no scored leaf under an ``and``: each candidate is
    #: some leaf's own ``id IN``), so only rows outside them need the database to check the clause
    candidates_match: bool = False

    @property
    def clause(self) -> ColumnElement[bool]:
        if not isinstance(self.make_clause, ColumnElement):
            self.make_clause = self.make_clause()
        return self.make_clause


def _properties(object_type: ObjectType) -> dict[str, DataProperty]:
    return {p.name: p for p in object_type.data_properties}


def _fields_for(cond: Condition, object_type: ObjectType) -> list[str]:
    """The fields a match/knn leaf searches (validated)."""
    props = _properties(object_type)
    op = cond.operation
    if cond.field == "*":
        return [p.name for p in object_type.data_properties if op in p.condition_operations]
    prop = props.get(cond.field or "")
    if prop is None:
        raise ValueError(
            f"unknown field {cond.field!r} for object type {object_type.id!r} "
            f"(data properties: {', '.join(sorted(props)) or 'none'})"
        )
    if op not in prop.condition_operations:
        raise ValueError(
            f"field {prop.name!r} of object type {object_type.id!r} does not support {op!r} "
            f"(it declares {prop.condition_operations or 'no operations'})"
        )
    return [prop.name]


def validate_condition(cond: Condition, object_type: ObjectType) -> None:
    """Raise ``ValueError`` naming the first unknown field, unsupported operation or malformed value."""
    op = cond.operation
    if op in ("and", "or"):
        for sub in cond.sub_conditions:
            validate_condition(sub, object_type)
        return
    if op not in LEAF_OPERATIONS:
        raise ValueError(f"unknown operation {op!r}")
    if cond.field is None or cond.field == "":
        raise ValueError(f"operation {op!r} needs a field")
    if op in SCORED_OPERATIONS:
        _fields_for(cond, object_type)
        if not isinstance(cond.value, str) or not cond.value.strip():
            raise ValueError(f"{op!r} on {cond.field!r} needs a non-empty string value")
        return
    if cond.field == "*":
        raise ValueError(f"field '*' only works with match or knn, not {op!r}")
    props = _properties(object_type)
    prop = props.get(cond.field)
    if prop is None and cond.field != "id":
        raise ValueError(
            f"unknown field {cond.field!r} for object type {object_type.id!r} "
            f"(data properties: {', '.join(sorted(props)) or 'none'})"
        )
    prop_type = prop.type if prop is not None else "string"
    if is_list_type(prop_type) and op not in _LIST_ONLY_OPS:
        raise ValueError(
            f"operation {op!r} is not supported on list field {cond.field!r} (use contain or exist)"
        )
    if op == "in" and not isinstance(cond.value, list | tuple):
        raise ValueError(f"'in' on {cond.field!r} needs a list value")
    if op == "range" and not (isinstance(cond.value, list | tuple) and len(cond.value) == 2):
        raise ValueError(f"'range' on {cond.field!r} needs value [low, high]")
    if op == "regex":
        if not isinstance(cond.value, str):
            raise ValueError(f"'regex' on {cond.field!r} needs a string pattern")
        try:
            re.compile(cond.value)
        except re.error as exc:
            raise ValueError(f"invalid regex for {cond.field!r}: {exc}") from None
    if op in ("like", "prefix") and not isinstance(cond.value, str):
        raise ValueError(f"{op!r} on {cond.field!r} needs a string value")
    if op not in ("exist", "in", "range") and cond.value is None:
        raise ValueError(f"{op!r} on {cond.field!r} needs a value")
    # type coercion errors surface here, before any SQL runs
    if op not in ("exist", "like", "regex"):
        values = cond.value if isinstance(cond.value, list | tuple) else [cond.value]
        for v in values:
            if v is not None:
                _coerce(v, prop_type, cond.field)


def _coerce(value: Any, prop_type: str, field_name: str) -> Any:
    t = prop_type.lower()
    if is_list_type(t):
        return value if isinstance(value, str | int | float | bool) else str(value)
    if t in _NUMERIC_TYPES:
        if isinstance(value, bool):
            raise ValueError(f"field {field_name!r} is numeric; got boolean {value!r}")
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"field {field_name!r} is numeric; cannot compare it with {value!r}") from None
        if math.isnan(number):
            raise ValueError(f"field {field_name!r}: NaN is not a comparable value")
        return number
    if t in _BOOL_TYPES:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        raise ValueError(f"field {field_name!r} is boolean; got {value!r}")
    if isinstance(value, list | dict):
        raise ValueError(f"field {field_name!r} is a string; got {type(value).__name__} {value!r}")
    return str(value) if not isinstance(value, str) else value


def _accessor(field_name: str, prop: DataProperty | None, dialect: str = "sqlite") -> ColumnElement[Any]:
    if prop is None:  # the pseudo-field "id"
        return instances.c.id
    return _typed_accessor(field_name, prop.type.lower(), dialect)


@lru_cache(maxsize=4096)
def _typed_accessor(field_name: str, t: str, dialect: str) -> ColumnElement[Any]:
    """The SQL of one property's value as its type reads it (an expression is immutable: built once, shared by
    every statement — kn_search compiles some forty leaves a query)."""
    element = instances.c.properties[field_name]
    if dialect == "postgresql" and (t in _NUMERIC_TYPES or t in _BOOL_TYPES):
        # only a JSON number (boolean) is read as one: a cast of any other text would fail the whole query
        kind, typed = ("number", element.as_float()) if t in _NUMERIC_TYPES else ("boolean", element.as_boolean())
        return case((func.json_typeof(instances.c.properties.op("->")(field_name)) == kind, typed), else_=null())
    if t in _NUMERIC_TYPES:
        return element.as_float()
    if t in _BOOL_TYPES:
        return element.as_boolean()
    return element.as_string()


_UPPER, _LOWER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz"
_ASCII_LOWER = str.maketrans(_UPPER, _LOWER)


def fold_ascii(text: str) -> str:
    """``text`` with its ASCII letters lowered and every other character kept: the case ``contain`` / ``like`` /
    ``prefix`` ignore (SQLite's ``LIKE``; PostgreSQL folds both sides the same way)."""
    return text.translate(_ASCII_LOWER)


def reads_name_column(object_type: ObjectType, field_name: str) -> bool:
    """Whether ``==``, ``in`` and ``contain`` on ``field_name`` read the indexed ``name`` column: the field is the
    type's display key and a text property (``name`` holds its value, or the instance id when it is missing)."""
    prop = _properties(object_type).get(field_name)
    return prop is not None and field_name == object_type.display_key and prop.type.lower() in TEXT_TYPES


def _folded(col: ColumnElement[Any], value: str, dialect: str) -> tuple[ColumnElement[Any], str]:
    """``(column, pattern value)`` for LIKE-based operations: SQLite's LIKE ignores the case of ASCII letters;
    on PostgreSQL both sides get those letters lowered, so the operations match the same rows."""
    if dialect != "postgresql":
        return col, value
    return func.translate(col, literal(_UPPER), literal(_LOWER)), fold_ascii(value)


def _list_contains(field_name: str, value: Any, dialect: str, holders: list[str] | None) -> ColumnElement[bool]:
    """``value`` is an item of the list field (or the field's scalar value). ``holders``: the ids of the
    instances holding it, from the store's :data:`Members` index — checked by id first, so the database parses
    the JSON of those rows only instead of every row of the type."""
    if dialect == "sqlite":
        each = func.json_each(instances.c.properties, f'$."{field_name}"').table_valued("value")
        member = exists(select(literal(1)).select_from(each).where(each.c.value == value))
    else:
        element = cast(instances.c.properties, JSONB)[field_name]
        # a list holding the value, or the value itself (json_each yields a scalar as its one row)
        member = or_(element.contains(func.jsonb_build_array(value)), element == func.to_jsonb(value))
    if holders is None:
        return member
    return and_(instances.c.id.in_(sorted(holders)), member) if holders else false()


def _leaf_sql(cond: Condition, object_type: ObjectType, dialect: str, members: Members | None = None
              ) -> ColumnElement[bool]:
    props = _properties(object_type)
    prop = props.get(cond.field or "")
    field_name = cond.field or ""
    prop_type = prop.type if prop is not None else "string"
    op, value = cond.operation, cond.value
    if op == "exist":
        col = instances.c.properties[field_name].as_string() if prop is not None else instances.c.id
        return col.is_(None) if value is False else col.is_not(None)
    if is_list_type(prop_type):  # contain (validated)
        items = [_coerce(v, prop_type, field_name) for v in (value if isinstance(value, list | tuple) else [value])]
        index = members(object_type.id, field_name) if members is not None and all(
            isinstance(v, str) for v in items) else None

        def holders(item: Any) -> list[str] | None:
            found = index.get(item, []) if index is not None else None
            return None if found is None or len(found) > MAX_MEMBER_IDS else found

        return and_(*(_list_contains(field_name, v, dialect, holders(v)) for v in items))
    col = _accessor(field_name, prop, dialect)
    # the display key is also the indexed ``name`` column: ==, in and contain read it (no JSON per row); the
    # JSON check keeps "missing" distinct (``name`` is then the instance id)
    on_name = reads_name_column(object_type, field_name)
    if op == "==":
        if on_name:
            return and_(instances.c.name == _coerce(value, prop_type, field_name), col.is_not(None))
        wanted = _coerce(value, prop_type, field_name)
        index = members(object_type.id, field_name) if (  # a text property (not the pseudo-field "id")
            members is not None and prop is not None and isinstance(wanted, str)
            and prop_type.lower() in TEXT_TYPES) else None
        if index is not None and NOT_TEXT not in index:  # the holders by id, not every row's JSON
            holders = index.get(wanted, [])
            if len(holders) <= MAX_MEMBER_IDS:
                return and_(instances.c.id.in_(sorted(holders)), col == wanted) if holders else false()
        return col == wanted
    if op == "!=":
        return or_(col != _coerce(value, prop_type, field_name), col.is_(None))
    if op == "in":
        values = [_coerce(v, prop_type, field_name) for v in value]
        if not values:
            return false()
        return and_(instances.c.name.in_(values), col.is_not(None)) if on_name else col.in_(values)
    if op == "contain":
        items = value if isinstance(value, list | tuple) else [value]
        text = instances.c.name if on_name else col
        contained = and_(*(folded.contains(v, autoescape=True)
                           for folded, v in (_folded(text, str(item), dialect) for item in items)))
        return and_(contained, col.is_not(None)) if on_name else contained
    if op == "like":
        folded, pattern = _folded(col, value, dialect)
        return folded.like(pattern)
    if op == "prefix":
        folded, pattern = _folded(col, value, dialect)
        return folded.startswith(pattern, autoescape=True)
    if op == "regex":
        return col.regexp_match(value)
    if op == "range":
        low, high = value
        parts = []
        if low is not None:
            parts.append(col >= _coerce(low, prop_type, field_name))
        if high is not None:
            parts.append(col <= _coerce(high, prop_type, field_name))
        return and_(true(), *parts)
    v = _coerce(value, prop_type, field_name)
    return {">": col > v, ">=": col >= v, "<": col < v, "<=": col <= v}[op]


#: property types whose values order as dates (ISO text: ``1813``, ``1813-01-28``, ``1813-01-28T00:00:00``)
_DATE_TYPES = frozenset({"date", "datetime", "timestamp", "time", "year", "gyear", "date-time"})


def order_expression(object_type: ObjectType, field_name: str, dialect: str = "sqlite") -> ColumnElement[Any]:
    """The SQL expression an ``ORDER BY`` on ``field_name`` sorts by: a numeric property as a number (``1178``
    after ``310``), a date property by its ISO text (which sorts as the dates do), a string as text, ``id`` as the
    instance id. ``ValueError`` names an unknown field or one that has no order (a list, a boolean)."""
    props = _properties(object_type)
    prop = props.get(field_name)
    if prop is None:
        if field_name == "id":
            return instances.c.id
        raise ValueError(f"unknown property {field_name!r} of object type {object_type.id!r} "
                         f"(data properties: {', '.join(sorted(props)) or 'none'})")
    t = prop.type.lower()
    if is_list_type(t) or t in _BOOL_TYPES or not (t in _NUMERIC_TYPES or t in _DATE_TYPES or t in TEXT_TYPES):
        raise ValueError(f"property {field_name!r} of object type {object_type.id!r} has no order "
                         f"(type {prop.type!r}: order by a number, date or string property)")
    return _accessor(field_name, prop, dialect)


def scored_leaves(cond: Condition) -> list[Condition]:
    """Every match/knn leaf of the tree (pre-order)."""
    if cond.operation in ("and", "or"):
        return [leaf for sub in cond.sub_conditions for leaf in scored_leaves(sub)]
    return [cond] if cond.operation in SCORED_OPERATIONS else []


def compile_condition(
    cond: Condition,
    object_type: ObjectType,
    *,
    match: Scorer,
    knn: Scorer,
    default_limit: int,
    dialect: str = "sqlite",
    match_limit: int = 2000,
    members: Members | None = None,
) -> Plan:
    """Validate and compile ``cond`` for instances of ``object_type``.

    ``match``/``knn`` are called as ``scorer(object_type_id, fields, query, limit)`` for each scored leaf; a knn
    leaf asks for ``cond.limit or default_limit`` neighbours, a match leaf for ``cond.limit or match_limit`` —
    or ``cond.limit or default_limit`` when no ``and`` lies above it: in an OR tree (or a lone leaf) a row's
    score is its best branch's score, so the best ``default_limit`` rows of the result are among the best
    ``default_limit`` of each scored branch and fetching more changes nothing. Under an ``and`` a filter may
    reject the best candidates, hence the larger pool. ``members`` (optional) indexes list fields for ``contain``
    on string items (:data:`Members`); without it such a leaf tests every row of the type.
    """
    validate_condition(cond, object_type)
    return _compile(cond, object_type, match, knn, default_limit, dialect, match_limit, False, members)


def _compile(cond, object_type, match, knn, default_limit, dialect, match_limit, under_and,  # noqa: ANN001
             members=None) -> Plan:  # noqa: ANN001
    op = cond.operation
    if op in ("and", "or"):
        plans = [
            _compile(s, object_type, match, knn, default_limit, dialect, match_limit, under_and or op == "and",
                     members)
            for s in cond.sub_conditions
        ]
        if not plans:
            empty = true() if op == "and" else false()
            return Plan(empty, empty)
        scores: dict[str, float] = {}
        for plan in plans:
            for key, score in plan.scores.items():
                if score > scores.get(key, -1.0):
                    scores[key] = score
        joined = and_ if op == "and" else or_
        rests = [p.rest_clause for p in plans]
        if op == "and":
            rest = None if any(r is None for r in rests) else and_(*rests)  # type: ignore[arg-type]
        else:
            kept = [r for r in rests if r is not None]
            rest = or_(*kept) if kept else None
        if op == "and":  # intersect the scored candidate sets
            for plan in plans:
                if plan.scored:
                    scores = {k: s for k, s in scores.items() if k in plan.scores}
        exact = op == "or" and all(p.candidates_match or not p.scores for p in plans)
        return Plan(lambda: joined(*(p.clause for p in plans)), rest, scores, any(p.scored for p in plans),
                    candidates_match=exact)
    if op in SCORED_OPERATIONS:
        fields = _fields_for(cond, object_type)
        scorer = knn if op == "knn" else match
        limit = cond.limit or (match_limit if op == "match" and under_and else default_limit)
        found = scorer(object_type.id, fields, cond.value, limit) if fields else {}
        def ids_in() -> ColumnElement[bool]:
            return instances.c.id.in_(sorted(found)) if found else false()

        clause = ids_in() if under_and else None  # under an ``and`` it is the rest clause too: made now
        return Plan(clause if clause is not None else ids_in, clause, dict(found), True, candidates_match=True)
    leaf = _leaf_sql(cond, object_type, dialect, members)
    return Plan(leaf, leaf)

"""Candidate :class:`~kgrag.reading.table_plan.TablePlan` s of a question on a network: the question's conditions
(stored values it says, numbers with a comparison) combined with answer types, projections, joins, counts and
orders — what :mod:`kgrag.reading.scorer` ranks.

    found = plan_candidates(read_question("How many pets are heavier than 10?"), view)
    found.plans[0].describe()   # e.g. 'count Pets · weight > 10'

Contract: conditions (:class:`Atom`) come from :func:`~kgrag.reading.linking.value_links` (an equality on the
property holding the value, two values said with "or" in one filter, a quoted part as ``contains``) and from the
reader's quantities with a comparison (one atom per number / date property, the :data:`NUMBER_PROPS` whose words
sit nearest the number); up to :data:`MAX_CONDITIONS` non-overlapping atoms on at most two types make a plan's
filters — the answer type's own, or a start type's joined by the shortest relation path (1–2 hops). Answer types:
the atoms' types and the :data:`TOP_TYPES` the question's words name best; projections: the display key and the
:data:`TOP_PROPS` properties the wh-phrase's noun and the question name best; a count cue gives ``count`` (and
``count_distinct``), a superlative gives orders on the :data:`TOP_PROPS` orderable properties (both directions when
the word does not say) and ``max`` / ``min`` of a number projection. At most :data:`MAX_PLANS` plans, deduplicated.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from kgrag.reading.linking import ValueLink, element_words, schema_fit, similar, value_links, words_near
from kgrag.reading.reader import Reading
from kgrag.reading.table_plan import Filter, Order, TablePlan
from kgrag.reading.tables import TableView, answer_text, sortable

__all__ = ["Atom", "Candidates", "count_cue", "head_words", "plan_candidates", "type_fit"]

TOP_TYPES = 3
TOP_PROPS = 3
NUMBER_PROPS = 3
MAX_ATOMS = 8
MAX_CONDITIONS = 2
MAX_PLANS = 1500
_COUNT = re.compile(r"\b(how many|number of|count|how much .* are there|total of)\b", re.I)
_DISTINCT = re.compile(r"\b(different|distinct|unique|kinds? of|types? of)\b", re.I)
_EXTREME = re.compile(r"\b(maximum|minimum|max|min|highest|lowest|largest|smallest|biggest|greatest|most|least|"
                      r"latest|earliest|oldest|youngest|newest|longest|shortest|fewest|top|best|worst|last|first|"
                      r"heaviest|lightest|cheapest|recent|recently)\b", re.I)


def count_cue(reading: Reading) -> bool:
    return reading.wh == "how many" or bool(_COUNT.search(reading.text))


@dataclass(frozen=True)
class Atom:
    """One condition the question states, on ``type_id``."""

    type_id: str
    filter: Filter
    span: tuple[int, int]
    link: ValueLink | None = None
    #: how well the property's words match the words around a number (number atoms)
    fit: float = 0.0


@dataclass
class Candidates:
    reading: Reading
    atoms: list[Atom]
    plans: list[TablePlan] = field(default_factory=list)
    #: plan key → the atoms it uses
    used: dict[str, tuple[Atom, ...]] = field(default_factory=dict)


def head_words(reading: Reading) -> tuple[str, ...]:
    """The lemmas of what the question asks for: the noun chunk of the wh-phrase's noun, and the chunk after its
    "of" ("the *first names* of the *teachers*"); the wh noun alone when no chunk holds it."""
    head = reading.wh_head.lower()
    toks = reading.tokens
    words: list[str] = []
    for n, (a, b) in enumerate(reading.noun_chunks):
        if head and any(t.lemma.lower() == head for t in toks[a:b]):
            words += [t.lemma.lower() for t in toks[a:b] if not t.is_stop and t.pos not in ("PUNCT", "DET")]
            if b < len(toks) and toks[b].lower == "of" and n + 1 < len(reading.noun_chunks):
                c, d = reading.noun_chunks[n + 1]
                if c == b + 1:
                    words += [t.lemma.lower() for t in toks[c:d] if not t.is_stop and t.pos not in ("PUNCT", "DET")]
            break
    if not words and head:
        words = [head]
    return tuple(words)


def phrase_fit(words: Sequence[str], phrase: Sequence[str]) -> float:
    """The share of ``words`` (generic ones weigh a quarter) that ``phrase`` holds."""
    if not words or not phrase:
        return 0.0
    total = found = 0.0
    for w in words:
        weight = 0.25 if w in ("id", "name", "code", "number", "type", "detail", "details") else 1.0
        total += weight
        found += weight * any(similar(w, p) for p in phrase)
    return found / total


def type_fit(reading: Reading, view: TableView, type_id: str) -> float:
    """How well the question names an object type: the share of its name's / id's words it holds, +1 when its
    wh-phrase's noun is one of them."""
    ot = view.types[type_id].type
    words = element_words(ot.name) or element_words(ot.id)
    fit = max(schema_fit(words, reading), schema_fit(element_words(ot.id), reading))
    head = reading.wh_head.lower()
    return fit + (1.0 if head and any(similar(head, w) for w in words) else 0.0)


def _prop_words(view: TableView, type_id: str, prop: str) -> tuple[str, ...]:
    p = next((d for d in view.types[type_id].type.data_properties if d.name == prop), None)
    return element_words(p.display_name or p.name) if p is not None else element_words(prop)


def prop_fit(reading: Reading, view: TableView, type_id: str, prop: str, near: Sequence[str] = ()) -> float:
    """How well the question names a property: its words' share in the question, +1 when the wh-phrase's noun is
    one of them, +share among ``near`` words."""
    words = _prop_words(view, type_id, prop)
    fit = schema_fit(words, reading)
    head = reading.wh_head.lower()
    if head and any(similar(head, w) for w in words):
        fit += 1.0
    if near:
        fit += sum(any(similar(w, n) for n in near) for w in words) / max(len(words), 1)
    return fit


def _atoms(reading: Reading, view: TableView) -> list[Atom]:
    atoms: list[Atom] = []
    links = value_links(reading, view)
    for link in links:
        if link.kind == "number":  # equality on the stored number's text ("9" or "10": one filter, two values)
            number = float(link.value) if _is_float(link.value) else None
            f = Filter(property=link.prop, op="=", values=(answer_text(number) if number is not None else link.value,),
                       source="number", text=link.text)
        elif link.kind == "contains":
            f = Filter(property=link.prop, op="contains", values=(link.text,), source="quoted", text=link.text)
        else:
            f = Filter(property=link.prop, op="=", values=(link.value,),
                       source="quoted" if link.kind == "quoted" else "value", text=link.text)
        atoms.append(Atom(link.type_id, f, (link.start, link.end), link))
    # the strongest value atoms: named / quoted / long spans, fewer rows
    atoms.sort(key=lambda a: (-(a.link.named if a.link else 0), -(a.link.tokens if a.link else 0),
                              a.link.rows if a.link else 0))
    atoms = atoms[:MAX_ATOMS]
    atoms += _or_atoms(reading, atoms)
    for q in reading.quantities:
        if q.op in (None, "=") and q.kind != "year":
            continue
        op = q.op or "="
        near = words_near(reading, q.start, q.end, 5)
        scored = []
        for type_id, table in view.types.items():
            for prop in table.properties:
                if not table.is_orderable(prop):
                    continue
                if q.kind == "number" and not table.is_numeric(prop):
                    continue
                if q.kind == "date" and table.is_numeric(prop):
                    continue
                scored.append((prop_fit(reading, view, type_id, prop, near), type_id, prop))
        scored.sort(key=lambda s: -s[0])
        value = sortable(q.iso) if q.kind == "date" and q.iso else q.value
        for fit, type_id, prop in scored[:NUMBER_PROPS]:
            f = Filter(property=prop, op=op, number=value, number2=q.value2, source="number", text=q.text)
            atoms.append(Atom(type_id, f, (q.start, q.end), None, fit))
    return atoms


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _or_atoms(reading: Reading, atoms: Sequence[Atom]) -> list[Atom]:
    """Two values of one property said with "or" between them → one filter holding both."""
    out = []
    for a, b in itertools.combinations(atoms, 2):
        if (a.type_id, a.filter.property) != (b.type_id, b.filter.property) or a.filter.op != "=" \
                or b.filter.op != "=" or not a.filter.values or not b.filter.values:
            continue
        first, second = sorted((a, b), key=lambda x: x.span[0])
        between = reading.text[first.span[1]:second.span[0]].lower()
        if first.span[1] <= second.span[0] and re.fullmatch(r"[\s\"'”’]*(or|and)(\s+(a|an|the))?[\s\"'“‘]*",
                                                             between):
            f = Filter(property=a.filter.property, op="=", values=(*first.filter.values, *second.filter.values),
                       source=first.filter.source, text=reading.text[first.span[0]:second.span[1]])
            out.append(Atom(a.type_id, f, (first.span[0], second.span[1]), first.link))
    return out


def _paths(view: TableView, start: str, end: str) -> list[tuple[tuple[str, str], ...]]:
    """The shortest relation paths (1–2 hops, either direction) from ``start`` to ``end``."""
    steps = view.steps
    one = [((rid, d),) for rid, d, far in steps.get(start, []) if far == end]
    if one:
        return one
    two = []
    for rid, d, mid in steps.get(start, []):
        for rid2, d2, far in steps.get(mid, []):
            if far == end and rid2 != rid:
                two.append(((rid, d), (rid2, d2)))
    return two[:3]


def _overlaps(atoms: Sequence[Atom]) -> bool:
    spans = sorted(a.span for a in atoms)
    return any(b[0] < a[1] for a, b in itertools.pairwise(spans))


def plan_candidates(reading: Reading, view: TableView) -> Candidates:
    """The question's candidate plans on ``view`` (see the module docstring)."""
    atoms = _atoms(reading, view)
    found = Candidates(reading, atoms)
    types = sorted(view.types, key=lambda t: -type_fit(reading, view, t))
    top = types[:TOP_TYPES]
    counting = count_cue(reading)
    distinct = bool(_DISTINCT.search(reading.text))
    extreme = bool(reading.superlatives) or bool(_EXTREME.search(reading.text))
    seen: set[str] = set()

    def add(plan: TablePlan, used: tuple[Atom, ...]) -> None:
        key = plan.key()
        if key not in seen and len(found.plans) < MAX_PLANS:
            seen.add(key)
            found.plans.append(plan)
            found.used[key] = used

    subsets: list[tuple[Atom, ...]] = [()]
    for n in range(1, MAX_CONDITIONS + 1):
        subsets += [c for c in itertools.combinations(atoms, n) if not _overlaps(c)
                    and len({a.type_id for a in c}) <= 2]
    for subset in subsets:
        typed = list(dict.fromkeys(a.type_id for a in subset))
        shapes: list[tuple[str, str]] = []  # (answer type, start type)
        if not typed:
            shapes += [(t, "") for t in top]
            shapes += [(t, s) for t in top[:2] for s in top if s != t]
        elif len(typed) == 1:
            shapes.append((typed[0], ""))
            if _paths(view, typed[0], typed[0]):
                shapes.append((typed[0], typed[0]))  # a self-join: Kyle's friends
            shapes += [(t, typed[0]) for t in top if t != typed[0]]
            shapes += [(typed[0], s) for s in top[:2] if s != typed[0]]
        else:
            shapes += [(typed[0], typed[1]), (typed[1], typed[0])]
        for answer_type, start_type in shapes:
            paths = _paths(view, start_type, answer_type) if start_type else [()]
            if start_type and not paths:
                continue
            if any(a.type_id not in (answer_type, start_type) for a in subset):
                continue
            filters = tuple(a.filter.model_copy(update={"on": "answer" if a.type_id == answer_type
                                                    and start_type != answer_type else "start"}) for a in subset)
            for path in paths[:4]:
                base = TablePlan(answer_type=answer_type, start_type=start_type, path=path, filters=filters)
                _shapes_of(base, reading, view, counting, distinct, extreme, add, subset)
    return found


def _projections(reading: Reading, view: TableView, type_id: str, numbers_only: bool = False) -> list[str]:
    table = view.types[type_id]
    props = [p for p in table.properties if not numbers_only or table.is_numeric(p)]
    ranked = sorted(props, key=lambda p: -prop_fit(reading, view, type_id, p))
    out = ranked[:TOP_PROPS]
    if not numbers_only and table.type.display_key in table.properties:
        out = [table.type.display_key] + [p for p in out if p != table.type.display_key]
    return out


def _orders(reading: Reading, view: TableView, base: TablePlan) -> list[Order]:
    out = []
    degree = reading.superlatives[0] if reading.superlatives else None
    near = words_near(reading, *degree.span, 4) if degree is not None else []
    for on, type_id in (("answer", base.answer_type), ("start", base.start_type)):
        if not type_id:
            continue
        table = view.types[type_id]
        props = [p for p in table.properties if table.is_orderable(p)]
        props.sort(key=lambda p: -prop_fit(reading, view, type_id, p, near))
        for prop in props[:TOP_PROPS]:
            for op in ("argmax", "argmin"):
                out.append(Order(property=prop, op=op, on=on, text=degree.text if degree else ""))
    return out


def _shapes_of(base: TablePlan, reading: Reading, view: TableView, counting: bool, distinct: bool, extreme: bool,
               add, used: tuple[Atom, ...]) -> None:  # noqa: ANN001 — add: the caller's closure
    if counting:
        add(base.model_copy(update={"op": "count"}), used)
        for prop in _projections(reading, view, base.answer_type)[: 2 if distinct else 1]:
            add(base.model_copy(update={"op": "count_distinct", "project": prop}), used)
        return
    projections = _projections(reading, view, base.answer_type)
    for prop in projections:
        add(base.model_copy(update={"project": prop}), used)
    if extreme:
        for order in _orders(reading, view, base):
            for prop in projections:
                add(base.model_copy(update={"project": prop, "order": order}), used)
        for prop in _projections(reading, view, base.answer_type, numbers_only=True):
            for op in ("max", "min"):
                add(base.model_copy(update={"project": prop, "op": op}), used)

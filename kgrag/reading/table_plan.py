"""A question's plan over a knowledge network's rows — the wider plan space of real questions (issue 49): project a
property, filter on property values (equality, one of two values, contains, numbers and dates), count (distinct)
over a join, max / min, superlative with projection, a constrained set through a join.

    TablePlan(answer_type="Pets", project="weight", order=Order(property="pet_age", op="argmin"),
              filters=[Filter(property="pet_type", op="=", values=["dog"])]).describe()
    # 'Pets.weight · pet_type = dog · argmin pet_age'

Contract: the plan reads as SQL over the network: ``answer_type`` is the table whose rows answer; ``filters`` with
``on="answer"`` restrict them; with ``start_type`` + ``path`` (1–2 relation hops from the start type to the answer
type) the answer rows are those linked from start rows that meet the ``on="start"`` filters; ``op`` says what is
returned — ``list`` the distinct values of ``project`` (the display key when empty), ``count`` the number of
answer rows, ``count_distinct`` the number of distinct ``project`` values, ``max`` / ``min`` the largest / smallest
``project`` value; ``order`` keeps the answer rows whose order value (of the answer row, or with ``on="start"`` of
the start row that reaches it) is the best (ties kept) before projecting. Filters' ``text`` and the order's are the
question's words they came from; :meth:`TablePlan.parts` lists the plan's pieces for features and explanations.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Filter", "Order", "TablePlan"]

FilterOp = Literal["=", "contains", "<", "<=", ">", ">=", "between"]


class _Part(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Filter(_Part):
    """``property <op> value(s)``: text equality with one or more ``values`` (any of them), ``contains`` a part,
    or a number / date comparison with ``number`` (and ``number2`` for ``between``)."""

    property: str = Field(min_length=1, max_length=300)
    op: FilterOp
    values: tuple[str, ...] = ()
    number: float | None = None
    number2: float | None = None
    on: Literal["answer", "start"] = "answer"
    #: how the filter was found: a stored value the question says ("value"), a quoted part ("quoted"), a number
    source: Literal["value", "quoted", "number", "topic"] = "value"
    text: str = Field(default="", max_length=300)

    def describe(self) -> str:
        if self.number is not None:
            bound = f"{_num(self.number)}..{_num(self.number2)}" if self.op == "between" else \
                f"{self.op} {_num(self.number)}"
        else:
            bound = f"{self.op} {' | '.join(self.values)}"
        return f"{'start.' if self.on == 'start' else ''}{self.property} {bound}"


class Order(_Part):
    """Keep the rows with the largest (``argmax``) or smallest (``argmin``) ``property`` value, ties kept."""

    property: str = Field(min_length=1, max_length=300)
    op: Literal["argmax", "argmin"]
    on: Literal["answer", "start"] = "answer"
    text: str = Field(default="", max_length=200)


class TablePlan(_Part):
    """See the module docstring."""

    answer_type: str = Field(min_length=1, max_length=300)
    project: str = Field(default="", max_length=300)
    op: Literal["list", "count", "count_distinct", "max", "min"] = "list"
    filters: tuple[Filter, ...] = ()
    start_type: str = Field(default="", max_length=300)
    #: ``(relation id, "out" | "in")`` hops from ``start_type`` to ``answer_type``
    path: tuple[tuple[str, Literal["out", "in"]], ...] = ()
    order: Order | None = None

    def describe(self) -> str:
        head = f"{self.answer_type}.{self.project or 'name'}" if self.op not in ("count",) else \
            f"count {self.answer_type}"
        if self.op == "count_distinct":
            head = f"count distinct {self.answer_type}.{self.project}"
        elif self.op in ("max", "min"):
            head = f"{self.op} {self.answer_type}.{self.project}"
        parts = [head]
        if self.start_type:
            hops = " ".join(f"-[{r}]->" if d == "out" else f"<-[{r}]-" for r, d in self.path)
            parts.append(f"from {self.start_type} {hops}")
        parts += [f.describe() for f in self.filters]
        if self.order is not None:
            parts.append(f"{self.order.op} {'start.' if self.order.on == 'start' else ''}{self.order.property}")
        return " · ".join(parts)

    def key(self) -> str:
        return self.model_dump_json()


def _num(value: float | None) -> str:
    if value is None:
        return "?"
    return str(int(value)) if float(value).is_integer() else f"{value:g}"

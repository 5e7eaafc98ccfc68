"""The tables a command prints (rich): a flow's markdown table redrawn, and one row of figures under a title.

    Console().print(markdown_table("| a | b |\\n|---|---|\\n| 1 | 2 |"))
    Console().print(figures_table("agent on q.json", ("n", "hit"), (10, 0.9)))
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rich.table import Table

__all__ = ["figures_table", "markdown_table"]


def markdown_table(markdown: str) -> Table:
    """A markdown table (as the flows' artifacts hold them) as a rich table."""
    rows = [line.strip("|").split("|") for line in markdown.splitlines() if line.startswith("| ") and "---" not in line]
    table = Table(show_header=True, header_style="bold")
    header, *body = rows
    for col in header:
        table.add_column(col.strip())
    for row in body:
        table.add_row(*(c.strip() for c in row))
    return table


def figures_table(title: str, columns: Iterable[str], values: Iterable[Any], *more: Iterable[Any]) -> Table:
    """Rows of figures (right-aligned; ``values`` then ``more``) under bold column names and ``title``."""
    table = Table(title=title, show_header=True, header_style="bold")
    for col in columns:
        table.add_column(col, justify="right")
    for row in (values, *more):
        table.add_row(*map(str, row))
    return table

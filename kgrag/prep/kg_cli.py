"""``kgrag kg …``: the triple graphs kgrag knows (built-in and registered) and what is prepared of each.

    kgrag kg list [--json]
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from kgrag.config import Settings, get_settings

__all__ = ["kg_app", "kg_rows"]

kg_app = typer.Typer(help="Triple graphs (KGs): the built-in ones and your own imports.", no_args_is_help=True)
console = Console()


def kg_rows(settings: Settings) -> list[dict[str, Any]]:
    """One row per KG: its source and, once prepared, its triple, entity, relation and question counts."""
    from kgrag.data.registry import registered_specs  # on use: the dataset readers cost `kgrag --help` ~25 ms
    from kgrag.prep.summary import read_summary

    rows = []
    for name, spec in registered_specs(settings).items():
        summary = read_summary(settings.dataset_dir(name))
        graph, questions = summary.get("graph", {}), summary.get("questions", {})
        if spec.reader == "endpoint":
            status = "endpoint" if spec.endpoint or settings.sparql_endpoint else "no endpoint set"
        else:
            status = "prepared" if graph else "not prepared"
        rows.append({"name": name, "source": spec.describe(), "status": status, "kind": spec.reader,
                     "triples": graph.get("triples"), "entities": graph.get("entities"),
                     "relations": graph.get("relations"), "questions": questions.get("questions")})
    return rows


def _count(value: int | None) -> str:
    return "—" if value is None else f"{value:,}"


@kg_app.command("list")
def kg_list(as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object per KG.")] = False) -> None:
    """Every KG kgrag knows: built-in and imported (kgrag prepare --dataset NAME --triples …), with its counts."""
    rows = kg_rows(get_settings())
    if as_json:
        for row in rows:
            print(json.dumps(row, ensure_ascii=False))
        return
    table = Table(header_style="bold")
    for column in ("name", "status", "triples", "entities", "relations", "questions"):  # never cut: scripts read them
        table.add_column(column, no_wrap=True, justify="left" if column in ("name", "status") else "right")
    table.add_column("source", overflow="fold", min_width=16)
    for row in rows:
        table.add_row(row["name"], row["status"], _count(row["triples"]), _count(row["entities"]),
                      _count(row["relations"]), _count(row["questions"]), row["source"])
    # piped (a script reads it): wide enough that no row wraps
    (console if console.is_terminal else Console(width=max(console.width, 200))).print(table)

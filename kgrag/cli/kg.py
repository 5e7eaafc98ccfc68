"""The KGs (graphs of triples): ``kgrag kg import`` (your own graph under a name: the engine of ``kgrag prepare
--triples``), ``kgrag kg list`` (the ones kgrag knows, built-in and registered, what is prepared of
each, its version and last update), ``kgrag kg update`` (triples to add and delete, applied as a new version),
``kgrag kg remove`` (an imported KG), ``kgrag sparql`` (a SELECT on a KG's store) and ``kgrag tools`` (the agent's KG
tool calls, one session).

    kgrag kg import mykg kg.ttl [--questions q.jsonl]; kgrag kg list [--json]; kgrag kg update mykg --add new.nt --delete gone.nt; kgrag kg remove mykg
    kgrag sparql 'SELECT * WHERE { ?s ?p ?o } LIMIT 3' --dataset demo
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from kgrag.cli.access import audited
from kgrag.cli.inputs import dataset_of
from kgrag.cli.output import console, friendly_errors
from kgrag.config import Settings, get_settings

__all__ = ["kg_app", "kg_remove", "kg_rows", "kg_update", "sparql", "tools"]

kg_app = typer.Typer(help="KGs (graphs of triples: RDF / TSV files or a SPARQL endpoint): the built-in ones and your "
                     "own imports.", no_args_is_help=True)


def kg_rows(settings: Settings) -> list[dict[str, Any]]:
    """One row per KG: its source and, once prepared, its triple, entity, relation and question counts."""
    from kgrag.data.registry import registered_specs  # on use: the dataset readers cost `kgrag --help` ~25 ms
    from kgrag.graph.versions.version_file import read_version
    from kgrag.prep.summary import read_summary

    rows = []
    for name, spec in registered_specs(settings).items():
        summary = read_summary(settings.dataset_dir(name))
        graph, questions = summary.get("graph", {}), summary.get("questions", {})
        version = read_version(settings.dataset_dir(name)) if graph else {}
        if spec.reader == "endpoint":
            status = "endpoint" if spec.endpoint or settings.sparql_endpoint else "no endpoint set"
        else:
            status = "prepared" if graph else "not prepared"
        rows.append({"name": name, "source": spec.describe(), "status": status, "kind": spec.reader,
                     "triples": graph.get("triples"), "entities": graph.get("entities"),
                     "relations": graph.get("relations"), "questions": questions.get("questions"),
                     "version": version.get("version") or ("prepared before versions" if graph else None),
                     "updated_at": version.get("updated_at"),
                     "updates": ("at the endpoint: kgrag queries it live, nothing to update here"
                                 if spec.reader == "endpoint" else "kgrag kg update / kgrag prepare")})
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
    table.add_column("version", overflow="fold")
    table.add_column("updated", no_wrap=True)
    table.add_column("source", overflow="fold", min_width=16)
    for row in rows:
        version = "live at the endpoint" if row["kind"] == "endpoint" else (row["version"] or "—")
        table.add_row(row["name"], row["status"], _count(row["triples"]), _count(row["entities"]),
                      _count(row["relations"]), _count(row["questions"]), version,
                      (row["updated_at"] or "—").replace("+00:00", "Z"), row["source"])
    # piped (a script reads it): wide enough that no row wraps
    (console if console.is_terminal else Console(width=max(console.width, 200))).print(table)


@kg_app.command("import")
@friendly_errors
def kg_import(
    name: Annotated[str, typer.Argument(help="The name to import your graph under (then: kgrag ask … --kg NAME).")],
    files: Annotated[list[Path], typer.Argument(help="Your graph: N-Triples, N-Quads, Turtle (.gz/.bz2 too) or "
                                                "head<TAB>relation<TAB>tail lines.", show_default=False)],
    questions: Annotated[list[Path] | None, typer.Option(help="Its questions: JSONL {question, topic_entities, "
                                                         "answers, split?}, MetaQA lines, WebQSP or CWQ JSON; "
                                                         "repeatable.")] = None,
    lang: Annotated[str, typer.Option(help="Preferred language of the names.")] = "en",
    max_bad_lines: Annotated[int, typer.Option(min=0, help="Malformed lines skipped before the import stops.")] = 1000,
    store: Annotated[bool, typer.Option(help="Also load the embedded SPARQL store the KG tools query.")] = True,
    alias_predicate: Annotated[list[str] | None, typer.Option(help="An IRI of your graph's own other-name "
                                                              "predicate; repeatable.")] = None,
    strict: Annotated[bool, typer.Option("--strict", help="Fail on the first malformed statement or line with "
                                         "file:line: reason; nothing is registered.")] = False,
) -> None:
    """Import your own graph as KG NAME — the engine of `kgrag prepare --dataset NAME --triples FILE` (idempotent:
    the same inputs again are a no-op; what it could not read is listed by file:line)."""
    from kgrag.cli.data import prepare

    prepare(dataset=name, triples=files, questions=questions, lang=lang, endpoint=None, graph=None, namespace=None,
            max_bad_lines=max_bad_lines, data_dir=None, store=store, alias_predicate=alias_predicate, strict=strict)


@kg_app.command("update")
@friendly_errors
def kg_update(
    name: Annotated[str, typer.Argument(help="The KG to change (kgrag kg list).")],
    add: Annotated[list[Path] | None, typer.Option("--add", help="Triples to add (any format prepare reads: "
                                                   ".nt/.nq/.ttl/…, .tsv/.txt; .gz/.bz2); repeatable.")] = None,
    delete: Annotated[list[Path] | None, typer.Option("--delete", help="Triples to delete (same formats); "
                                                      "repeatable.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the counts as one JSON object.")] = False,
) -> None:
    """Apply triples to add and to delete as a new version of the KG (no re-import); every served process
    answers from it on its next request. A malformed line rejects the whole update (file:line), nothing applied."""
    from kgrag.graph.versions.version_file import read_version
    from kgrag.prep.update import update_kg

    settings = get_settings()
    before = read_version(settings.dataset_dir(name)).get("version")
    stats = update_kg(settings, name, add or [], delete or [])
    if stats.changed:
        audited("kg.update", "kg", name, before, stats.version,
                {"triples_added": stats.triples_added, "triples_deleted": stats.triples_deleted,
                 "triples": stats.triples})
    if as_json:
        print(json.dumps(stats.as_dict(), ensure_ascii=False))
        return
    table = Table(header_style="bold", title=f"kg update {name}")
    table.add_column("item")
    table.add_column("value", justify="right")
    for label, value in (("triples added", stats.triples_added), ("triples deleted", stats.triples_deleted),
                         ("to delete, not found", stats.not_found), ("to add, already present", stats.already_present),
                         ("names changed", stats.names_changed), ("entities new", stats.entities_new),
                         ("entities gone", stats.entities_gone), ("relations new", stats.relations_new),
                         ("triples now", stats.triples)):
        table.add_row(label, f"{value:,}")
    table.add_row("version", stats.version if stats.changed else f"{stats.version or '—'} (nothing changed)")
    table.add_row("seconds", f"{stats.seconds:.2f}")
    console.print(table)


@kg_app.command("remove")
@friendly_errors
def kg_remove(name: Annotated[str, typer.Argument(help="An imported KG (kgrag kg list).")]) -> None:
    """Remove an imported KG: its registration, prepared files (every version) and trained checkpoints."""
    from kgrag.prep.remove import remove_kg

    removed = remove_kg(get_settings(), name)
    audited("kg.remove", "kg", name, None, None, {"paths": len(removed)})
    console.print(f"removed KG {name!r} ({len(removed)} paths)", highlight=False)


@friendly_errors
def sparql(
    query: Annotated[str, typer.Argument(help="A SPARQL 1.1 SELECT query ('-' reads it from stdin).")],
    dataset: Annotated[str, typer.Option(help="Prepared KG whose store to query. (kgrag kg list)")] = "metaqa",
    limit: Annotated[int, typer.Option(help="Rows to print at most.")] = 50,
    as_json: Annotated[bool, typer.Option("--json", help="Print rows as JSON lines.")] = False,
) -> None:
    """Run a SELECT query on a KG's store (KGRAG_SPARQL_ENDPOINT when set, else the embedded store)."""
    from kgrag.graph.versions.stores import open_store

    text = sys.stdin.read() if query == "-" else query
    with open_store(dataset_of(dataset)) as store:
        rows = store.select(text)
    for row in rows[:limit]:
        if as_json:
            console.print_json(json.dumps({k: v.value for k, v in row.items()}, ensure_ascii=False))
        else:
            console.print("\t".join(f"{k}={v.value}" for k, v in row.items()), highlight=False, markup=False)
    console.print(f"{len(rows)} row(s)", style="dim")


@friendly_errors
def tools(
    kg: Annotated[str, typer.Option(help="Prepared KG to query (demo, metaqa, medical). (kgrag kg list)")] = "metaqa",
    question: Annotated[str, typer.Option(help="The question (used to rank relations).")] = "",
    topic: Annotated[list[str] | None, typer.Option(help="Topic entity name or id; repeatable.")] = None,
    trace: Annotated[Path | None, typer.Option(help="Write the session trace here as JSON.")] = None,
) -> None:
    """Run KG tool queries from stdin in ONE session, printing each result as the model sees it.

    One query per line: get_relations("…") or get_triples("…", ["rel", …]), bare or inside <kg-query>…</kg-query>.
    Results are separated by a line `---`. Uses KGRAG_SPARQL_ENDPOINT when set, else the embedded store.
    """
    from kgrag.tools.factory import open_session

    session = open_session(dataset_of(kg), question=question, topics=topic or [])
    first = True
    for line in sys.stdin:
        if not line.strip():
            continue
        if not first:
            typer.echo("---")
        typer.echo(session.run(line.rstrip("\n")))
        first = False
    if trace is not None:
        trace.write_text(json.dumps(session.trace, ensure_ascii=False, indent=2), encoding="utf-8")

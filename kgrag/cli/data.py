"""``kgrag prepare`` (a built-in dataset, your own graph's files, or a SPARQL endpoint) and ``kgrag data …`` (where
the public datasets come from, downloading them).

    kgrag prepare --dataset demo && kgrag data list
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from kgrag.cli.above import above
from kgrag.cli.output import console, err_console, friendly_errors
from kgrag.config import get_settings
from kgrag.progress import stage

__all__ = ["data_app", "prepare"]

data_app = typer.Typer(help="Datasets: where they come from, downloading them.", no_args_is_help=True)


@friendly_errors
def prepare(
    dataset: Annotated[str, typer.Option(help="Dataset to prepare: built-in (metaqa, demo, medical), registered, or "
                                        "the NAME to import your own graph under.")] = "metaqa",
    triples: Annotated[list[Path] | None, typer.Option(help="Your graph: N-Triples, N-Quads, Turtle (.gz/.bz2 too) "
                                                       "or head<TAB>relation<TAB>tail lines; repeatable.")] = None,
    questions: Annotated[list[Path] | None, typer.Option(help="Its questions: JSONL {question, topic_entities, "
                                                         "answers, split?}, MetaQA lines, WebQSP or CWQ JSON; "
                                                         "repeatable.")] = None,
    lang: Annotated[str, typer.Option(help="Preferred language of the names.")] = "en",
    endpoint: Annotated[str | None, typer.Option(help="Register a graph served by this SPARQL endpoint instead "
                                                 "(not copied).")] = None,
    graph: Annotated[str | None, typer.Option(help="With --endpoint: the named graph holding it.")] = None,
    namespace: Annotated[str | None, typer.Option(help="With --endpoint: the IRI base of its entities and "
                                                  "relations (default Freebase's).")] = None,
    max_bad_lines: Annotated[int, typer.Option(min=0, help="Malformed lines skipped before the import stops.")] = 1000,
    data_dir: Annotated[Path | None, typer.Option(help="Override KGRAG_DATA_DIR.")] = None,
    store: Annotated[bool, typer.Option(help="With --triples: also load the embedded SPARQL store the KG tools "
                                        "query (--no-store: H-RAG only, reading the mapped graph).")] = True,
    alias_predicate: Annotated[list[str] | None, typer.Option(help="With --triples: an IRI of your graph's own "
                                                              "other-name predicate (beside skos:altLabel, "
                                                              "schema:alternateName, common.topic.alias); "
                                                              "repeatable.")] = None,
    strict: Annotated[bool, typer.Option("--strict", help="Fail on the first malformed statement or line (graph or "
                                         "questions) with file:line: reason; nothing is registered. Without it "
                                         "they are skipped, counted and the first reasons printed.")] = False,
) -> None:
    """Prepare a dataset (idempotent): CSR graph, Oxigraph store, resolved questions, summary. With --triples,
    import your own graph as dataset NAME (registered once every step succeeded; the same inputs again: a
    no-op); with --endpoint, register a graph that stays on its SPARQL server.

    Outputs go to <KGRAG_WORK_DIR>/<dataset>/ and the summary is printed as a table.
    """
    from kgrag.prep.current import current_summary
    from kgrag.prep.register import import_spec, register_endpoint
    from kgrag.prep.steps import check_inputs, check_strict
    from kgrag.prep.summary import read_summary
    from kgrag.terminal.tables import markdown_table

    settings = get_settings()
    if endpoint:
        spec = register_endpoint(settings, dataset, endpoint, graph, namespace, lang, questions or [])
        console.print(f"registered {spec.name}: {spec.describe()} (try: kgrag tools --kg {spec.name}, "
                      f"kgrag ask \"…\" --kg {spec.name})", highlight=False)
        return
    spec = import_spec(settings, dataset, triples or [], questions or [], lang, max_bad_lines, store,
                       alias_predicate or [])
    check_inputs(spec, data_dir or settings.data_dir)  # the flow checks them too; here before Prefect starts
    markdown = current_summary(spec, data_dir or settings.data_dir, settings)
    if markdown is not None:  # nothing changed since the last prepare: no flow to start, nothing to import
        last = read_summary(settings.dataset_dir(spec.name))
        if strict:  # the last (lenient) prepare of these very inputs skipped lines: strict fails on them now
            check_strict("graph", last.get("graph", {}))
            check_strict("questions", last.get("questions", {}))
        console.print(f"{spec.name} is prepared and its inputs are unchanged: nothing to redo (the last summary; "
                      f"{settings.dataset_dir(spec.name)})", highlight=False)
        console.print(markdown_table(markdown))
        _print_losses(last.get("graph", {}), last.get("questions", {}))
        _print_try_next(spec.name)
        return
    with stage(f"kgrag prepare --dataset {spec.name}"):
        result = above("flows.prepare_data").prepare_data(
            dataset=spec.name, data_dir=str(data_dir) if data_dir else None,
            spec=None if spec.builtin else spec.model_dump(mode="json"), strict=strict)
    console.print(markdown_table(result["markdown"]))
    _print_losses(result["graph"], result["questions"])
    _print_try_next(spec.name)


def _print_losses(graph: dict, questions: dict) -> None:
    """What the import lost (:mod:`kgrag.prep.losses`), on stderr: the count and the first ``file:line: reason``."""
    from kgrag.prep.losses import loss_report

    lines = loss_report(graph, questions)
    if lines:
        err_console.print(f"[bold yellow]warning:[/] {escape(lines[0])}", highlight=False, soft_wrap=True)
        for line in lines[1:]:
            err_console.print(escape(line), highlight=False, soft_wrap=True)


def _print_try_next(dataset: str) -> None:
    """After ``prepare``: sample questions of the prepared data as ``kgrag ask`` commands to copy."""
    from kgrag.prep.next_steps import ask_command, try_next

    settings = get_settings()
    commands = try_next(dataset, settings.dataset_dir(dataset))
    lines = []
    if commands:
        lines += [f"questions of the prepared {dataset} data:", *commands]
        if not (settings.checkpoint_dir / "gflownet" / f"{dataset}-latest.json").is_file():
            lines.append("(no trained path reasoner yet: the agent plans a query graph zero-shot — one to three hops "
                         "through named or unnamed nodes, the answer type asked, counts, year filters, "
                         "superlatives; train a reasoner with `kgrag train-retriever --dataset "
                         f"{dataset}` then `kgrag retriever-eval` and `kgrag train-gflownet`)")
    elif dataset == "medical":  # its questions are Cypher-paired: they are answered over the knowledge network
        lines += ["the medical questions are answered over its knowledge network:", "kgrag kn load medical",
                  ask_command("上气道梗阻有哪些症状", "kn", "medical")]
    lines.append("kgrag serve   (the console page at http://127.0.0.1:8000/, the HTTP API; OpenAPI at /docs)")
    console.print("\n[bold]Try next[/]")
    for line in lines:
        console.print(f"  {escape(line)}", highlight=False, soft_wrap=True)


@data_app.command("list")
def data_list() -> None:
    """List the datasets kgrag knows, their public source and whether they are in the data dir."""
    from kgrag.data.download import DATASETS

    settings = get_settings()
    table = Table("name", "present", "source")
    for name, info in DATASETS.items():
        present = (settings.data_dir / info.subdir).exists()
        table.add_row(name, "yes" if present else "no", info.source)
    console.print(table)


@data_app.command("download")
@friendly_errors
def data_download(
    name: Annotated[str, typer.Argument(help="Dataset name (see `kgrag data list`).")],
    dest: Annotated[Path | None, typer.Option(help="Target data dir (default KGRAG_DATA_DIR).")] = None,
    timeout: Annotated[float, typer.Option(help="Seconds per HTTP request.")] = 30.0,
) -> None:
    """Download a dataset from its public source into the data dir (needs network access)."""
    from kgrag.data.download import download

    path = download(name, dest or get_settings().data_dir, timeout=timeout)
    console.print(f"downloaded {name} to {path}")

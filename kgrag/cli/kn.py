"""``kgrag kn …``: start, load, sync, list, inspect and query knowledge networks (attached to ``kgrag`` by
:mod:`kgrag.cli`; a test may run ``kn_app`` alone). The database is ``Settings.db_url`` unless ``--db`` is given.

    kgrag kn load demo && kgrag kn query demo Person --condition '{"operation":"match","field":"name","value":"kamau"}'
    kgrag kn init my-net && kgrag kn load my-net/my-net.yaml && kgrag ask "Who wrote 1984?" --kn my-net
    kgrag kn load my-net/my-net.yaml   # after editing its files: the difference only; kgrag kn list / remove
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError
from rich.markup import escape
from rich.table import Table

from kgrag.cli.access import audited
from kgrag.cli.output import console, network_errors
from kgrag.config import get_settings
from kgrag.errors import KgragError
from kgrag.network.loaders import check_kn_id
from kgrag.network.schema.model import Condition

__all__ = ["TEMPLATE_QUESTIONS", "kn_app", "template_files"]

kn_app = typer.Typer(
    help="Networks (knowledge networks: typed objects and their links, in rows of a SQL store): start your own "
    "(init), load built-in networks or your schema files into the store, list them, show schemas, query instances.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

DbOption = Annotated[
    str | None,
    typer.Option("--db", help="SQLAlchemy URL; default: KGRAG_DATABASE_URL or <KGRAG_WORK_DIR>/kgrag.db."),
]


def _store(db: str | None):  # noqa: ANN202
    # on use: the store (SQLAlchemy, numpy, the ranking stack) costs ~0.3 s at import, which `kgrag --help` skips
    from kgrag.network.store import NetworkStore

    return NetworkStore(db or get_settings().db_url)


@kn_app.command("load")
@network_errors
def load_cmd(
    name: Annotated[str, typer.Argument(
        help="A built-in network (medical, metaqa, demo or synthetic; kn_id = the name) or the path of your "
        "network's schema file (.yaml/.yml/.json; kn_id = the file's kn_id, else its stem). The format: "
        "kgrag/network/loaders/declarative.py; an example: examples/library/library.yaml (or `kgrag kn init`).",
        show_default=False, metavar="NAME|PATH")],
    kn_id: Annotated[str | None, typer.Option(
        "--kn-id", help="Load it under this network id instead (letters, digits, _ . -).")] = None,
    db: DbOption = None,
    data_dir: Annotated[Path | None, typer.Option(help="Override KGRAG_DATA_DIR (medical, metaqa).")] = None,
    full: Annotated[bool, typer.Option(
        "--full", help="Replace the whole network (every row re-derived) instead of applying the difference.")] = False,
    defer_vectors: Annotated[bool, typer.Option(
        "--defer-vectors", help="A network loaded in full answers from its text index and conditions as soon as "
        "its rows are in; its instances' vectors are made after (progress in `kgrag kn list` and /healthz; knn "
        "answers nothing until they are all made). An interrupted fill is finished by the next `kn load`.")] = False,
) -> None:
    """Build a network and load it: a stored network gets only the difference (instances by id, each
    content-hashed; links by relation, source, target) in one transaction that bumps its version; an absent one,
    or --full, is loaded in full.

    Embeddings go through the on-disk cache, so the first load of medical/metaqa takes minutes and later
    loads seconds. A network whose vectors were deferred (--defer-vectors) gets them after its rows, in the same
    command (a later `kn load` finishes an interrupted fill). Prints the instances inserted / updated / deleted /
    unchanged, the links inserted / deleted,
    the network's counts, its version and the seconds taken, and why when a change had to reload in full. A
    missing file, invalid YAML/JSON, an invalid schema or a data cell that does not fit its property's type is
    one error line naming the file.
    """
    # on use: the loaders pull the embedding stack (~0.3 s at import), which `kgrag --help` skips
    from kgrag.network.loaders.registry import sync_named

    if kn_id is not None:
        check_kn_id(kn_id, "--kn-id")
    from kgrag.cli.load_progress import load_progress

    store = _store(db)
    before = {k: store.network_version(k) for k, _ in store.list_networks()}
    with load_progress() as progress:
        stats = sync_named(name, store, data_dir, log=lambda line: console.print(escape(line)), kn_id=kn_id,
                           full=full, progress=progress, defer_vectors=defer_vectors)
    if stats.changed:
        audited("kn.load", "kn", stats.kn_id, before.get(stats.kn_id), stats.version,
                {**stats.counts(), **({"full_reload": True} if stats.full_reload else {})}, db)
    counts = store.network_stats(stats.kn_id)
    table = Table(title=f"loaded {stats.kn_id}" + (" (in full)" if stats.full_reload else " (the difference)"),
                  show_header=True, header_style="bold")
    for col in ("", "inserted", "updated", "deleted", "unchanged", "stored"):
        table.add_column(col, justify="left" if not col else "right")
    table.add_row("instances", str(stats.instances_inserted), str(stats.instances_updated),
                  str(stats.instances_deleted), str(stats.instances_unchanged), str(counts.get("instances", "")))
    table.add_row("links", str(stats.links_inserted), "—", str(stats.links_deleted), "—",
                  str(counts.get("links", "")))
    console.print(table)
    console.print(f"version {stats.version[:12]} · {stats.seconds:.1f} s", highlight=False)
    if stats.full_reload:
        console.print(f"full reload: {escape(stats.note)}", highlight=False, soft_wrap=True)
    elif stats.note:
        console.print(escape(stats.note), highlight=False, soft_wrap=True)


#: the starting-point network ``kn init`` writes (package data; the same files as examples/library/)
TEMPLATE = "library"
#: questions the LLM-free agent answers on the template (printed by ``kn init``; tests ask them)
TEMPLATE_QUESTIONS = ("Who wrote 1984?", "Which books did Jane Austen write?")


def template_files() -> dict[str, bytes]:
    """The template network's files: name -> content (the schema file is ``library.yaml``)."""
    from importlib.resources import files

    folder = files("kgrag.network.examples").joinpath(TEMPLATE)
    return {f.name: f.read_bytes() for f in sorted(folder.iterdir(), key=lambda f: f.name)
            if f.is_file() and not f.name.startswith((".", "__"))}


@kn_app.command("init")
@network_errors
def init_cmd(
    directory: Annotated[Path, typer.Argument(help="Where to write the network's files (created if missing).",
                                              show_default=False, metavar="DIR")],
    kn_id: Annotated[str | None, typer.Option(
        "--kn-id", help="The network's id (letters, digits, _ . -); default: the directory's name.")] = None,
) -> None:
    """Write a small working network to start from: a schema file (<kn_id>.yaml) and its CSV / JSONL data (a
    library: authors, books, genres, publishers, cities). Edit them, then load, ask and serve (printed).
    Existing files are never overwritten."""
    if kn_id is not None:
        check_kn_id(kn_id, "--kn-id")
    else:
        kn_id = directory.resolve().name
        try:
            check_kn_id(kn_id, "the directory's name")
        except KgragError as exc:
            raise KgragError(f"{exc}; pass --kn-id") from None
    files = template_files()
    schema = f"{kn_id}.yaml"
    text = files.pop(f"{TEMPLATE}.yaml").decode("utf-8")
    if kn_id != TEMPLATE:  # quoted: an id such as 2024 stays a string; the title is the new network's
        text = text.replace(f"\nkn_id: {TEMPLATE}\n", f"\nkn_id: {json.dumps(kn_id)}\n", 1)
        title = " ".join(re.split(r"[_.\-\s]+", kn_id)).strip().title() or kn_id
        text = text.replace(f"\nname: {TEMPLATE.title()}\n", f"\nname: {json.dumps(title)}\n", 1)
        text = text.replace("\ncomment: Authors,", "\ncomment: Started from kgrag's library template. Authors,", 1)
    files = {schema: text.encode("utf-8"), **files}
    if directory.exists() and not directory.is_dir():
        raise KgragError(f"{directory} exists and is not a directory")
    taken = [name for name in files if (directory / name).exists()]
    if taken:
        raise KgragError(f"{directory / taken[0]} already exists; not overwriting it (choose an empty directory)")
    directory.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        (directory / name).write_bytes(content)
    path = directory / schema
    console.print(f"wrote {len(files)} files to {escape(str(directory))}: {escape(', '.join(files))}",
                  highlight=False, soft_wrap=True)
    console.print("next:", highlight=False)
    for line in (f"kgrag kn load {path}", *(f'kgrag ask "{q}" --kn {kn_id}' for q in TEMPLATE_QUESTIONS),
                 "kgrag serve",
                 "curl -s -X POST http://127.0.0.1:8000/api/agent-retrieval/in/v1/kn/kn_search "
                 f"-H 'content-type: application/json' -d '{{\"query\": \"{TEMPLATE_QUESTIONS[0]}\", "
                 f"\"kn_id\": \"{kn_id}\"}}'"):
        console.print(f"  {escape(line)}", highlight=False, soft_wrap=True)


def _updated(loaded_at: float | None) -> str:
    """A network's last change in local time, ISO to the second."""
    from datetime import datetime

    return datetime.fromtimestamp(loaded_at).isoformat(timespec="seconds") if loaded_at else ""


def _vectors_state(pending: dict | None) -> str:
    """``kn list``'s "vectors pending" column (shown while some network's are): empty when they are all made,
    else how far a deferred fill is (instances done/all)."""
    if not isinstance(pending, dict):
        return ""
    return f"{int(pending.get('done', 0)):,}/{int(pending.get('total', 0)):,}"


@kn_app.command("list")
@network_errors
def list_cmd(
    db: DbOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object per network.")] = False,
) -> None:
    """List the loaded networks with their instance and link counts, version, last update and — while a load's
    deferred vectors are being made — how far they are (``vectors_pending``: instances done / total)."""
    store = _store(db)
    networks = store.list_networks()
    rows = []
    for kn_id, name in networks:
        stats = store.network_stats(kn_id)
        rows.append({"kn_id": kn_id, "name": name, "instances": stats.get("instances"), "links": stats.get("links"),
                     "version": stats["version"], "updated": _updated(stats.get("loaded_at")),
                     "source": stats.get("source"), "vectors_pending": stats.get("vectors_pending")})
    if as_json:
        for row in rows:
            print(json.dumps(row, ensure_ascii=False))
        return
    if not networks:
        console.print("no knowledge networks loaded; try `kgrag kn load demo`")
        return
    table = Table(show_header=True, header_style="bold")
    filling = any(row["vectors_pending"] for row in rows)  # the column only while some vectors are being made
    for col in ("kn_id", "name", "instances", "links", "version", "updated", *(["vectors pending"] if filling else [])):
        table.add_column(col, no_wrap=col in ("version", "updated", "vectors pending"))
    for row in rows:
        table.add_row(escape(row["kn_id"]), escape(row["name"]), str(row["instances"] if row["instances"] is not None
                                                                     else ""),
                      str(row["links"] if row["links"] is not None else ""), row["version"][:12], row["updated"],
                      *([_vectors_state(row["vectors_pending"])] if filling else []))
    console.print(table)


@kn_app.command("remove")
@network_errors
def remove_cmd(
    kn_id: Annotated[str, typer.Argument(help="The network to remove (see `kgrag kn list`).", show_default=False)],
    db: DbOption = None,
) -> None:
    """Remove a network: its rows, text index, vectors, term statistics and trained domain vectors, in one
    transaction; every process serving it sees it gone on its next request. A built-in network's id (medical,
    metaqa, demo, synthetic) is refused: reload it with `kgrag kn load NAME` instead."""
    import shutil

    from kgrag.errors import NetworkNotFound
    from kgrag.network.loaders.registry import NAMED_NETWORKS
    from kgrag.rank.train_domain import domain_model_dir

    if kn_id in NAMED_NETWORKS:
        raise KgragError(f"{kn_id!r} is a built-in network: not removed (reload it with `kgrag kn load {kn_id}`)")
    store = _store(db)
    stats = store.network_stats(kn_id)  # NetworkNotFound: rc 1, naming the loaded networks' command
    version = store.network_version(kn_id)
    if not store.delete(kn_id):
        raise NetworkNotFound(kn_id)
    audited("kn.remove", "kn", kn_id, version, None,
            {"instances": stats.get("instances", 0), "links": stats.get("links", 0)}, db)
    vectors = domain_model_dir(get_settings(), kn_id)
    trained = vectors.is_dir()
    if trained:
        shutil.rmtree(vectors)
    console.print(f"removed {escape(kn_id)}: {stats.get('instances', 0)} instances, {stats.get('links', 0)} links"
                  + (f"; its domain vectors {escape(str(vectors))}" if trained else ""),
                  highlight=False, soft_wrap=True)


@kn_app.command("show")
@network_errors
def show_cmd(
    kn_id: Annotated[str, typer.Argument(help="The network to describe.")],
    db: DbOption = None,
    max_rows: Annotated[int, typer.Option(help="Show at most this many object and relation types.")] = 50,
) -> None:
    """Summarise a network's schema: object types (properties, instance counts) and relation types."""
    store = _store(db)
    network = store.get_network(kn_id)
    counts = store.network_stats(kn_id).get("instances_by_type", {})
    console.print(f"[bold]{escape(network.kn_id)}[/] — {escape(network.name)}: {escape(network.comment)}",
                  highlight=False)
    objects = Table(
        title=f"object types ({len(network.object_types)})", show_header=True, header_style="bold"
    )
    for col in ("id", "name", "instances", "properties (operations)"):
        objects.add_column(col)
    for ot in network.object_types[:max_rows]:
        # printed literally: "[knn,match,==,prefix]" is no rich markup
        props = "; ".join(
            f"{p.name}:{p.type} [{','.join(p.condition_operations)}]" for p in ot.data_properties
        )
        objects.add_row(escape(ot.id), escape(ot.name), str(counts.get(ot.id, 0)), escape(props))
    console.print(objects)
    relations = Table(
        title=f"relation types ({len(network.relation_types)})", show_header=True, header_style="bold"
    )
    for col in ("id", "name", "source → target", "comment"):
        relations.add_column(col)
    for rt in network.relation_types[:max_rows]:
        relations.add_row(
            *map(escape, (rt.id, rt.name, f"{rt.source_object_type_id} → {rt.target_object_type_id}", rt.comment))
        )
    console.print(relations)


@kn_app.command("query")
@network_errors
def query_cmd(
    kn_id: Annotated[str, typer.Argument(help="The network.")],
    object_type: Annotated[str, typer.Argument(help="The object type id whose instances to query.")],
    condition: Annotated[
        str | None,
        typer.Option(
            help='A condition as JSON, e.g. \'{"operation":"knn","field":"name","value":"感冒"}\' or '
            '{"operation":"and","sub_conditions":[...]}. Omitted: any instance.'
        ),
    ] = None,
    limit: Annotated[int, typer.Option(min=1, help="At most this many instances.")] = 10,
    db: DbOption = None,
) -> None:
    """Query instances of one object type with a condition (knn/match are scored); prints JSON lines."""
    cond = None
    if condition:
        try:
            cond = Condition.model_validate(json.loads(condition))
        except json.JSONDecodeError as exc:
            raise KgragError(f"--condition is not valid JSON: {exc}") from None
        except ValidationError as exc:
            raise KgragError(
                f"--condition is not a valid condition: {exc.errors()[0]['msg']} at "
                f"{'.'.join(map(str, exc.errors()[0]['loc']))}"
            ) from None
    for hit in _store(db).query_instances(kn_id, object_type, cond, limit):
        console.print(json.dumps(hit.model_dump(), ensure_ascii=False), markup=False, highlight=False,
                      soft_wrap=True)


@kn_app.command("sync")
@network_errors
def sync_cmd(
    kn_id: Annotated[str | None, typer.Argument(
        help="The network to sync (see `kgrag kn list`); omitted: every network.", show_default=False)] = None,
    full_scan: Annotated[bool, typer.Option(
        "--full-scan", help="Read every row of a table-bound network (sees rows deleted without a tombstone).")] = False,
    full_scan_every: Annotated[int | None, typer.Option(
        help="A full scan of a table-bound network every N syncs (0: only when asked or needed); default: the "
        "daily run's (kgrag.network.sync.table.FULL_SCAN_EVERY, 7).", min=0, show_default=False)] = None,
    db: DbOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print each network's sync report as JSON.")] = False,
) -> None:
    """Sync networks from their sources now, as the daily `knowledge-network-daily` run does: a schema file's
    files are re-read and their difference applied; a network bound to database tables reads only the rows past
    each table's watermark (kgrag/network/sync/table.py); a built-in network is left as it is."""
    from kgrag.network.sync.source import sync_network
    from kgrag.network.sync.table import FULL_SCAN_EVERY

    every = FULL_SCAN_EVERY if full_scan_every is None else full_scan_every
    store = _store(db)
    try:
        names = [kn_id] if kn_id else [name for name, _ in store.list_networks()]
        reports = []
        for name in names:
            before = store.network_version(name)
            report = sync_network(store, name, full_scan=full_scan, full_scan_every=every)
            after = store.network_version(name)
            if after != before:
                audited("kn.sync", "kn", name, before, after,
                        {k: v for k, v in report.counts().items() if v}, db)
            reports.append(report)
    finally:
        store.close()
    if as_json:
        console.print_json(json.dumps([{**r.as_dict(), "counts": r.counts()} for r in reports], default=str))
        return
    table = Table("network", "mode", "why", "inserted", "updated", "deleted", "unchanged", "links +", "links −",
                  "rows read", "seconds", title="kn sync")
    for r in reports:
        c = r.counts()
        table.add_row(escape(r.kn_id), r.mode, escape(r.reason), *(str(c[k]) for k in (
            "instances_inserted", "instances_updated", "instances_deleted", "instances_unchanged", "links_inserted",
            "links_deleted")), str(r.rows_read), f"{r.seconds:.2f}")
    console.print(table)

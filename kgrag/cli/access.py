"""``kgrag keys …`` (create, list, revoke scoped API keys) and ``kgrag audit`` (who changed what), on the network
store's database (``KGRAG_DATABASE_URL`` or ``<KGRAG_WORK_DIR>/kgrag.db``; ``--db`` overrides).

    kgrag keys create --name agent-a --scope read --kn library     # prints the token once
    kgrag keys list; kgrag keys revoke agent-a
    kgrag audit --kn library --since 1d --json

:func:`audited` is how the other commands (``kn load``, ``kn sync``, ``kn remove``, ``kg update``, ``kg remove``)
append their change to the log, as ``cli:<user>``.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import time
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from kgrag.cli.output import console, network_errors
from kgrag.config import get_settings

__all__ = ["audit_cmd", "audited", "keys_app", "parse_since"]

keys_app = typer.Typer(help="Scoped API keys for `kgrag serve`: each may read, write or administer named networks "
                       "and KGs (or all). Shown once, stored hashed.", no_args_is_help=True, add_completion=False,
                       pretty_exceptions_enable=False)

DbOption = Annotated[str | None, typer.Option("--db", help="SQLAlchemy URL; default: KGRAG_DATABASE_URL or "
                                              "<KGRAG_WORK_DIR>/kgrag.db.")]


def _engine(db: str | None):  # noqa: ANN202
    from kgrag.network.store.core import make_engine

    return make_engine(db or get_settings().db_url)


def audited(action: str, kind: str, target: str, before: str | None, after: str | None,
            counts: dict[str, Any] | None = None, db: str | None = None) -> None:
    """Append a command's change to the audit log as ``cli:<user>``."""
    from kgrag.access.audit import AuditLog
    from kgrag.access.keys import cli_actor

    engine = _engine(db)
    try:
        AuditLog(engine).append(cli_actor(), action, kind, target, before, after, counts)
    finally:
        engine.dispose()


def _names(values: list[str] | None, other: list[str] | None) -> list[str] | None:
    """Repeated options, each may be comma-separated; ``*``: all. Neither ``--kn`` nor ``--kg`` given: all of both;
    only one of them given: none of the other."""
    if not values:
        return None if not other else []
    out = [v.strip() for value in values for v in value.split(",") if v.strip()]
    return None if "*" in out else out


@keys_app.command("create")
@network_errors
def keys_create(
    name: Annotated[str, typer.Option("--name", help="The key's name (what the audit log shows).")],
    scope: Annotated[str, typer.Option("--scope", help="read, write (changes) or admin (changes and keys).")],
    kn: Annotated[list[str] | None, typer.Option("--kn", help="A network it covers; repeatable or comma-separated; "
                                                "'*': every network. Without --kn and --kg: every network and KG; "
                                                "with only --kg: no network.")] = None,
    kg: Annotated[list[str] | None, typer.Option("--kg", help="A KG it covers; repeatable or comma-separated; "
                                                "'*': every KG. With only --kn: no KG.")] = None,
    rate_per_minute: Annotated[int, typer.Option(help="Requests a minute (0: the server's "
                                                 "KGRAG_KEY_RATE_PER_MINUTE).", min=0)] = 0,
    max_body_bytes: Annotated[int, typer.Option(help="Largest request body (0: the server's KGRAG_MAX_BODY_BYTES).",
                                                min=0)] = 0,
    db: DbOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the key (token included) as JSON.")] = False,
) -> None:
    """Create a key and print its token — the only time it is shown (it is stored hashed)."""
    from kgrag.access.audit import AuditLog
    from kgrag.access.keys import KeyStore, cli_actor

    engine = _engine(db)
    try:
        token, info = KeyStore(engine).create(name, scope, _names(kn, kg), _names(kg, kn),  # type: ignore[arg-type]
                                              rate_per_minute, max_body_bytes, cli_actor())
        AuditLog(engine).append(cli_actor(), "key.create", "key", name, None, info.key_id,
                                {"scope": scope, "kns": info.kns, "kgs": info.kgs})
    finally:
        engine.dispose()
    if as_json:
        print(json.dumps({**info.as_dict(), "token": token}))
        return
    console.print(f"key {escape(name)} ({scope}; networks: {_shown(info.kns)}; KGs: {_shown(info.kgs)})",
                  highlight=False)
    console.print(token, highlight=False, markup=False)
    console.print("the token is shown once: keep it now (Authorization: Bearer <token>)", style="dim")


def _shown(names: list[str] | None) -> str:
    return "all" if names is None else ", ".join(names) or "none"


def _when(ts: float | None) -> str:
    return "—" if ts is None else dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")


@keys_app.command("list")
@network_errors
def keys_list(db: DbOption = None,
              as_json: Annotated[bool, typer.Option("--json", help="One JSON list.")] = False) -> None:
    """Every key (never a token): scope, networks, KGs, limits, who created it and when, revoked when."""
    from kgrag.access.keys import KeyStore

    engine = _engine(db)
    try:
        keys = KeyStore(engine).list()
    finally:
        engine.dispose()
    if as_json:
        print(json.dumps([k.as_dict() for k in keys]))
        return
    table = Table("name", "id", "scope", "networks", "KGs", "rate/min", "created", "by", "revoked", title="API keys")
    for k in keys:
        table.add_row(escape(k.name), k.key_id, k.scope, escape(_shown(k.kns)), escape(_shown(k.kgs)),
                      str(k.rate_per_minute or "—"), _when(k.created_at), escape(k.created_by), _when(k.revoked_at))
    console.print(table)


@keys_app.command("revoke")
@network_errors
def keys_revoke(name: Annotated[str, typer.Argument(help="The key's name (kgrag keys list).")],
                db: DbOption = None) -> None:
    """Revoke a key: every server refuses it within seconds (it stays listed, with when)."""
    from kgrag.access.audit import AuditLog
    from kgrag.access.keys import KeyStore, cli_actor

    engine = _engine(db)
    try:
        try:
            info = KeyStore(engine).revoke(name)
        except KeyError as exc:
            raise ValueError(exc.args[0]) from None
        AuditLog(engine).append(cli_actor(), "key.revoke", "key", name, info.key_id, None)
    finally:
        engine.dispose()
    console.print(f"revoked key {escape(name)}", highlight=False)


def parse_since(value: str | None, now: float | None = None) -> float | None:
    """``30m``, ``12h``, ``7d`` (that long ago) or an ISO date/time; ``None`` stays ``None``."""
    if value is None:
        return None
    now = time.time() if now is None else now
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd])\s*", value)
    if match:
        return now - float(match.group(1)) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[match.group(2)]
    try:
        return dt.datetime.fromisoformat(value.strip()).timestamp()
    except ValueError:
        raise ValueError(f"--since {value!r}: a duration (30m, 12h, 7d) or an ISO date (2026-11-28T09:00)") from None


@network_errors
def audit_cmd(
    kn: Annotated[str | None, typer.Option("--kn", help="Only this network's changes.")] = None,
    kg: Annotated[str | None, typer.Option("--kg", help="Only this KG's changes.")] = None,
    since: Annotated[str | None, typer.Option("--since", help="Since a duration ago (30m, 12h, 7d) or an ISO "
                                              "date/time.")] = None,
    limit: Annotated[int, typer.Option(help="Newest entries shown at most.", min=1, max=100_000)] = 200,
    db: DbOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON list, newest first.")] = False,
) -> None:
    """Who changed what: every change over HTTP (the key's name) or by a command (cli:<user>) — network or KG,
    when, the version before → after and the counts — newest first."""
    from kgrag.access.audit import AuditLog

    if kn is not None and kg is not None:
        raise ValueError("give --kn or --kg, not both")
    kind, target = ("kn", kn) if kn is not None else (("kg", kg) if kg is not None else (None, None))
    engine = _engine(db)
    try:
        entries = AuditLog(engine).entries(kind, target, parse_since(since), limit)
    finally:
        engine.dispose()
    if as_json:
        print(json.dumps([e.as_dict() for e in entries], ensure_ascii=False))
        return
    table = Table("when", "who", "action", "target", "version before → after", "counts", title="audit")
    for e in entries:
        versions = f"{(e.version_before or '—')[:12]} → {(e.version_after or '—')[:12]}"
        counts = ", ".join(f"{k} {v}" for k, v in e.counts.items())
        table.add_row(_when(e.at), escape(e.actor), e.action, escape(f"{e.kind} {e.target}"), versions,
                      escape(counts))
    console.print(table)

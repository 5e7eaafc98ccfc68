"""``kgrag keys`` and ``kgrag audit`` (kgrag/cli/access.py) through the real command line, and the audit log's
guarantees on SQLite and PostgreSQL: keys shown once and stored hashed, revocation, bad input one line; every
command that changes a network (kn load, kn remove) appends ``cli:<user>`` entries; the log refuses UPDATE and
DELETE; a change and its entry commit together (one fails: neither is kept).

    .venv/bin/python -m pytest -q tests/test_access_cli.py
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import delete, select, update
from sqlalchemy.exc import DBAPIError
from typer.testing import CliRunner

from kgrag.access.audit import AuditLog, audit_log
from kgrag.access.keys import KeyStore, api_keys, cli_actor
from kgrag.cli import app
from kgrag.cli.access import parse_since
from kgrag.network.loaders.declarative import load_declarative
from kgrag.network.schema.model import Instance
from kgrag.network.store import NetworkChanges, NetworkStore
from kgrag.network.store.core import make_engine

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "library" / "library.yaml"
runner = CliRunner()


def _json(result) -> object:  # noqa: ANN001
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_keys_are_shown_once_stored_hashed_listed_and_revoked(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'k.db'}"
    made = _json(runner.invoke(app, ["keys", "create", "--name", "agent-a", "--scope", "read", "--kn", "library,shop",
                                     "--db", db, "--json"]))
    token = made["token"]
    assert made["kns"] == ["library", "shop"] and made["kgs"] == [] and token.startswith("kgr_")  # --kn only: no KG
    engine = make_engine(db)
    try:
        with engine.connect() as conn:
            stored = " ".join(str(v) for row in conn.execute(select(api_keys)) for v in row)
        assert token not in stored and token.split("_")[-1] not in stored  # only the salted HMAC is kept
        assert KeyStore(engine).verify(token).kns == frozenset({"library", "shop"})
    finally:
        engine.dispose()
    listed = _json(runner.invoke(app, ["keys", "list", "--db", db, "--json"]))
    assert [k["name"] for k in listed] == ["agent-a"] and "token" not in listed[0]
    again = runner.invoke(app, ["keys", "create", "--name", "agent-a", "--scope", "read", "--db", db])
    assert again.exit_code == 1 and "exists already" in again.output
    bad = runner.invoke(app, ["keys", "create", "--name", "x", "--scope", "root", "--db", db])
    assert bad.exit_code == 1 and "scope 'root'" in bad.output
    assert runner.invoke(app, ["keys", "revoke", "agent-a", "--db", db]).exit_code == 0
    assert runner.invoke(app, ["keys", "revoke", "nobody", "--db", db]).exit_code == 1
    engine = make_engine(db)
    try:
        assert KeyStore(engine).verify(token) is None
    finally:
        engine.dispose()
    actions = [e["action"] for e in _json(runner.invoke(app, ["audit", "--db", db, "--json"]))]
    assert actions == ["key.revoke", "key.create"]


def test_network_commands_append_cli_entries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KGRAG_WORK_DIR", str(tmp_path / "work"))
    monkeypatch.delenv("KGRAG_DATABASE_URL", raising=False)
    db = f"sqlite:///{tmp_path / 'kn.db'}"
    loaded = runner.invoke(app, ["kn", "load", str(EXAMPLE), "--db", db])
    assert loaded.exit_code == 0, loaded.output
    assert runner.invoke(app, ["kn", "load", str(EXAMPLE), "--db", db]).exit_code == 0  # nothing changed: no entry
    assert runner.invoke(app, ["kn", "remove", "library", "--db", db]).exit_code == 0
    entries = _json(runner.invoke(app, ["audit", "--kn", "library", "--since", "1h", "--db", db, "--json"]))
    assert [e["action"] for e in entries] == ["kn.remove", "kn.load"]
    assert {e["actor"] for e in entries} == {cli_actor()}
    removed, load = entries
    assert load["version_before"] is None and load["version_after"] == removed["version_before"]
    assert load["counts"]["instances_inserted"] > 0 and removed["counts"]["instances"] > 0
    table = runner.invoke(app, ["audit", "--db", db])
    assert table.exit_code == 0 and "kn.remove" in table.output
    assert _json(runner.invoke(app, ["audit", "--kn", "other", "--db", db, "--json"])) == []


def test_the_audit_log_refuses_updates_and_deletes(db_url: str) -> None:
    engine = make_engine(db_url)
    try:
        log = AuditLog(engine)
        log.append("someone", "kn.changes", "kn", "library", "v1", "v2", {"links_inserted": 2})
        for statement in (update(audit_log).values(actor="someone else"), delete(audit_log)):
            with pytest.raises(DBAPIError, match="append-only"), engine.begin() as conn:
                conn.execute(statement)
        [entry] = log.entries(target="library")
        assert entry.actor == "someone" and entry.counts == {"links_inserted": 2}
    finally:
        engine.dispose()


def test_a_change_and_its_entry_commit_together(db_url: str) -> None:
    store = NetworkStore(db_url)
    try:
        store.sync(*load_declarative(EXAMPLE))
        log = AuditLog(store.engine)
        before = store.network_version("library")
        book = NetworkChanges(upsert_instances=[Instance(object_type_id="Book", id="b:new",
                                                         properties={"title": "A New Book", "year": 2026})])

        def refused(conn, version_before, stats) -> None:  # noqa: ANN001 - the audit entry cannot be written
            log.append("agent-a", "kn.changes", "kn", "library", version_before, stats.version, conn=conn)
            raise RuntimeError("audit unavailable")

        with pytest.raises(RuntimeError, match="audit unavailable"):
            store.apply_changes("library", book, on_write=refused)
        assert store.network_version("library") == before and not store.get_instances("library", "Book", ["b:new"])
        assert log.entries(target="library") == []

        def audit(conn, version_before, stats) -> None:  # noqa: ANN001
            log.append("agent-a", "kn.changes", "kn", "library", version_before, stats.version, stats.counts(),
                       conn=conn)

        stats = store.apply_changes("library", book, on_write=audit)
        [entry] = log.entries(target="library")
        assert (entry.version_before, entry.version_after) == (before, stats.version) != (before, before)
        assert entry.counts == {"instances_inserted": 1}
    finally:
        store.close()


def test_since_takes_durations_and_dates() -> None:
    assert parse_since("2h", now=10_000.0) == 10_000.0 - 7200
    assert parse_since(None) is None
    assert parse_since("2026-11-28T09:00") > 0
    with pytest.raises(ValueError, match="duration"):
        parse_since("yesterday")

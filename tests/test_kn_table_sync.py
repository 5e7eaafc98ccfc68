"""A network bound to real PostgreSQL tables (kgrag/network/loaders/table_source.py, kgrag/network/sync/table.py):
the first sync loads it, later ones read only rows past each table's watermark (an integer and a timestamp key),
tombstoned rows are deleted at once, rows deleted outright by the full scan; the daily flow (flows/kn_refresh.py)
syncs every network and publishes its counts as a keyed artifact."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import pytest
import sqlalchemy as sa
from fixtures.postgres import database_url

from kgrag.errors import KgragError
from kgrag.network.loaders.registry import sync_named
from kgrag.network.store import NetworkStore
from kgrag.network.sync.state import SyncState
from kgrag.network.sync.table import sync_table_network

SCHEMA = """
kn_id: school
name: School
object_types:
  - id: Teacher
    name: teacher
    data_properties:
      - {name: name, type: string, condition_operations: [match, "=="]}
      - {name: subject, type: string, condition_operations: ["=="]}
  - id: Course
    name: course
    display_key: title
    data_properties:
      - {name: title, type: string, condition_operations: [match, "=="]}
      - {name: credits, type: integer, condition_operations: ["==", ">"]}
relation_types:
  - {id: teaches, name: teaches, source_object_type_id: Teacher, target_object_type_id: Course}
data:
  instances:
    - {object_type: Teacher, table: teachers, url_env: SCHOOL_DB_URL, incremental_column: changed_at}
    - {object_type: Course, table: courses, url_env: SCHOOL_DB_URL, id_column: code, columns: {title: course_title},
       incremental_column: version, deleted_column: deleted}
  links:
    - {relation_type: teaches, table: teaching, url_env: SCHOOL_DB_URL, source_column: teacher_id,
       target_column: course_code, incremental_column: changed_at, deleted_column: deleted}
"""
T0 = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "library" / "library.yaml"


def _tables(metadata: sa.MetaData) -> tuple[sa.Table, sa.Table, sa.Table]:
    teachers = sa.Table("teachers", metadata, sa.Column("id", sa.Integer, primary_key=True),
                        sa.Column("name", sa.Text), sa.Column("subject", sa.Text),
                        sa.Column("changed_at", sa.DateTime(timezone=True)))
    courses = sa.Table("courses", metadata, sa.Column("code", sa.Text, primary_key=True),
                       sa.Column("course_title", sa.Text), sa.Column("credits", sa.Integer),
                       sa.Column("version", sa.BigInteger), sa.Column("deleted", sa.Boolean, default=False),
                       sa.Column("internal_note", sa.Text))
    teaching = sa.Table("teaching", metadata, sa.Column("teacher_id", sa.Integer), sa.Column("course_code", sa.Text),
                        sa.Column("changed_at", sa.DateTime(timezone=True)),
                        sa.Column("deleted", sa.Boolean, default=False))
    return teachers, courses, teaching


class School:
    """The source database: three tables and helpers to change them."""

    def __init__(self, url: str) -> None:
        self.engine = sa.create_engine(url)
        metadata = sa.MetaData()
        self.teachers, self.courses, self.teaching = _tables(metadata)
        metadata.create_all(self.engine)
        with self.engine.begin() as conn:
            conn.execute(self.teachers.insert(), [
                {"id": i, "name": name, "subject": subject, "changed_at": T0}
                for i, (name, subject) in enumerate([("Ada Quill", "maths"), ("Bo Fenn", "physics"),
                                                     ("Cy Marr", "history")], 1)])
            conn.execute(self.courses.insert(), [
                {"code": f"c{i}", "course_title": title, "credits": 5 + i, "version": i, "deleted": False,
                 "internal_note": "x"}
                for i, title in enumerate(["Algebra", "Optics", "Rome", "Calculus"], 1)])
            conn.execute(self.teaching.insert(), [
                {"teacher_id": t, "course_code": c, "changed_at": T0, "deleted": False}
                for t, c in [(1, "c1"), (2, "c2"), (3, "c3"), (1, "c4")]])

    def run(self, *statements: sa.Executable) -> None:
        with self.engine.begin() as conn:
            for statement in statements:
                conn.execute(statement)

    def change(self) -> None:
        """A day's changes: one course inserted, one renamed, one tombstoned (its link row stays behind, as soft
        deletes leave them); a link added, one tombstoned; a teacher deleted outright with its link rows (teachers
        have no tombstone column)."""
        later = T0 + dt.timedelta(days=1)
        c, k = self.courses, self.teaching
        self.run(
            c.insert().values(code="c5", course_title="Geometry", credits=4, version=10, deleted=False),
            c.update().where(c.c.code == "c1").values(course_title="Linear Algebra", version=11),
            c.update().where(c.c.code == "c2").values(deleted=True, version=12),
            k.insert().values(teacher_id=2, course_code="c5", changed_at=later, deleted=False),
            k.update().where(k.c.teacher_id == 1, k.c.course_code == "c4").values(deleted=True, changed_at=later),
            k.delete().where(k.c.teacher_id == 3),  # a foreign key would cascade so
            self.teachers.delete().where(self.teachers.c.id == 3),
        )


@pytest.fixture
def school(pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[School, Path]:
    monkeypatch.setenv("SCHOOL_DB_URL", pg_url)
    path = tmp_path / "school.yaml"
    path.write_text(SCHEMA, encoding="utf-8")
    source = School(pg_url)
    yield source, path
    source.engine.dispose()


def _titles(store: NetworkStore) -> dict[str, str]:
    return {hit.id: hit.properties["title"] for hit in store.query_instances("school", "Course", None, 50, False)}


def test_incremental_sync_sees_inserts_updates_and_tombstones_the_full_scan_the_rest(school, tmp_path) -> None:
    source, path = school
    store = NetworkStore(f"sqlite:///{tmp_path / 'kn.db'}")
    first = sync_table_network(store, path)
    assert (first.mode, first.reason) == ("full scan", "first load")
    assert first.counts()["instances_inserted"] == 7 and first.counts()["links_inserted"] == 4
    assert _titles(store) == {"c1": "Algebra", "c2": "Optics", "c3": "Rome", "c4": "Calculus"}
    assert store.get_instances("school", "Course", ["c1"])[0].properties == {"title": "Algebra", "credits": 6}
    assert first.watermarks["instances:Course:courses"] == 4
    version = store.network_version("school")

    quiet = sync_table_network(store, path)  # nothing changed: the boundary rows are read again, a no-op
    assert quiet.mode == "incremental" and quiet.rows_read < 11
    assert quiet.counts()["instances_unchanged"] >= 1 and store.network_version("school") == version
    assert sum(v for k, v in quiet.counts().items() if k != "instances_unchanged") == 0

    source.change()
    old = SyncState(store.engine).read("school").watermarks
    day = sync_table_network(store, path)
    counts = day.counts()
    assert day.mode == "incremental", day
    assert (counts["instances_inserted"], counts["instances_updated"], counts["instances_deleted"]) == (1, 1, 1)
    assert counts["links_inserted"] == 1 and counts["links_deleted"] >= 1
    assert _titles(store) == {"c1": "Linear Algebra", "c3": "Rome", "c4": "Calculus", "c5": "Geometry"}
    assert ("2", "c5") in set(store.linked_ids("school", "teaches", ["2"], True))
    assert store.linked_ids("school", "teaches", ["1"], True) == [("1", "c1")]
    assert store.get_instances("school", "Teacher", ["3"])  # deleted outright: waits for the full scan
    assert day.watermarks["instances:Course:courses"] == 12

    # a crash after the change committed but before the watermarks were stored: the rows come again, a no-op
    SyncState(store.engine).record("school", old, full_scan=False)
    version = store.network_version("school")
    again = sync_table_network(store, path)
    assert again.counts()["instances_unchanged"] >= 3 and store.network_version("school") == version
    assert sum(v for k, v in again.counts().items() if k != "instances_unchanged") == 0

    full = sync_table_network(store, path, full_scan=True)
    assert (full.mode, full.reason) == ("full scan", "asked")
    assert full.counts()["instances_deleted"] == 1 and not store.get_instances("school", "Teacher", ["3"])
    assert store.count_instances("school") == 6
    store.close()


def test_the_full_scan_comes_every_nth_run_and_when_the_schema_changes(school, tmp_path) -> None:
    _, path = school
    store = NetworkStore(f"sqlite:///{tmp_path / 'kn.db'}")
    sync_table_network(store, path, full_scan_every=3)
    modes = [sync_table_network(store, path, full_scan_every=3).mode for _ in range(3)]
    assert modes == ["incremental", "incremental", "full scan"]  # every 3rd run
    path.write_text(SCHEMA.replace("name: course\n", "name: course unit\n"), encoding="utf-8")
    changed = sync_table_network(store, path, full_scan_every=3)
    assert (changed.mode, changed.reason) == ("full scan", "the schema changed")
    assert store.get_network("school").object_types[1].name == "course unit"
    store.close()


def test_a_lookback_window_reads_rows_committed_late_below_the_watermark(school, tmp_path) -> None:
    source, path = school
    path.write_text(SCHEMA.replace("incremental_column: version,", "incremental_column: version, lookback: 2,"),
                    encoding="utf-8")
    store = NetworkStore(f"sqlite:///{tmp_path / 'kn.db'}")
    sync_table_network(store, path)  # watermark 4
    source.run(source.courses.insert().values(code="late", course_title="Latin", credits=3, version=3,
                                              deleted=False),
               source.courses.insert().values(code="older", course_title="Logic", credits=3, version=1,
                                              deleted=False))
    late = sync_table_network(store, path)
    assert late.mode == "incremental" and late.counts()["instances_inserted"] == 1
    assert late.watermarks["instances:Course:courses"] == 4  # not moved back by the window
    assert store.get_instances("school", "Course", ["late", "older"])[0].id == "late"
    assert len(store.get_instances("school", "Course", ["older"])) == 0  # outside the window: the full scan's
    assert sync_table_network(store, path, full_scan=True).counts()["instances_inserted"] == 1
    store.close()


def test_kn_load_then_kn_sync_on_the_command_line(school, tmp_path) -> None:
    import json

    from typer.testing import CliRunner

    from kgrag.cli.kn import kn_app

    source, path = school
    db = f"sqlite:///{tmp_path / 'kn.db'}"
    loaded = CliRunner().invoke(kn_app, ["load", str(path), "--db", db])
    assert loaded.exit_code == 0, loaded.output
    first = CliRunner().invoke(kn_app, ["sync", "school", "--db", db, "--json"])
    assert first.exit_code == 0, first.output
    assert json.loads(first.output)[0]["reason"] == "no sync recorded yet"  # kn load read the tables, no watermark
    source.change()
    day = CliRunner().invoke(kn_app, ["sync", "--db", db, "--json"])  # every network
    (report,) = json.loads(day.output)
    assert report["mode"] == "incremental" and report["counts"]["instances_updated"] == 1, day.output
    table = CliRunner().invoke(kn_app, ["sync", "school", "--db", db, "--full-scan"], env={"COLUMNS": "200"})
    assert table.exit_code == 0 and "full scan" in table.output and "asked" in table.output, table.output
    gone = CliRunner().invoke(kn_app, ["sync", "nowhere", "--db", db])
    assert gone.exit_code == 1 and "no knowledge network 'nowhere'" in gone.output


@pytest.mark.parametrize(("old", "new", "message"), [
    ("columns: {title: course_title}", "columns: {title: headline}", "columns.title 'headline' is not a column"),
    ("table: teaching", "table: lessons", "table 'lessons' not found"),
    ("incremental_column: version", "incremental_column: \"version; drop table courses\"",
     "is not a column of table 'courses'"),
    ("id_column: code, columns: {title: course_title}", "id_column: code", "display_key 'title' has no column"),
    ("url_env: SCHOOL_DB_URL, id_column", "url_env: NO_SUCH_VARIABLE, id_column", "NO_SUCH_VARIABLE"),
    ("{object_type: Teacher, table", "{object_type: Pupil, table", "'Pupil' is not declared"),
])
def test_a_bad_table_entry_is_one_line_naming_it(school, tmp_path, old: str, new: str, message: str) -> None:
    source, path = school
    assert old in SCHEMA
    path.write_text(SCHEMA.replace(old, new), encoding="utf-8")
    store = NetworkStore(f"sqlite:///{tmp_path / 'kn.db'}")
    with pytest.raises(KgragError, match=message.replace("(", r"\(")) as error:
        sync_table_network(store, path)
    assert "\n" not in str(error.value) and str(path) in str(error.value)
    assert store.list_networks() == []
    with source.engine.connect() as conn:  # the source table is untouched
        assert conn.execute(sa.select(sa.func.count()).select_from(source.courses)).scalar() == 4
    store.close()


def test_a_link_to_a_missing_instance_rejects_the_sync_and_keeps_the_watermarks(school, tmp_path) -> None:
    source, path = school
    store = NetworkStore(f"sqlite:///{tmp_path / 'kn.db'}")
    sync_table_network(store, path)
    before = SyncState(store.engine).read("school").watermarks
    version = store.network_version("school")
    source.run(source.teaching.insert().values(teacher_id=9, course_code="c1", changed_at=T0 + dt.timedelta(days=2),
                                               deleted=False))
    with pytest.raises(KgragError, match="rejected, nothing applied.*'9'"):
        sync_table_network(store, path)
    assert store.network_version("school") == version
    assert SyncState(store.engine).read("school").watermarks == before
    store.close()


def test_the_daily_flow_syncs_every_network_and_publishes_its_counts(
        school, request, tmp_path_factory, prefect_harness, work_settings, monkeypatch) -> None:
    from test_ops_flows import _artifact

    from flows.kn_refresh import kn_refresh
    from kgrag.config import get_settings

    source, path = school
    store_url = database_url(request, "postgresql", tmp_path_factory)  # the network store on PostgreSQL too
    monkeypatch.setenv("KGRAG_DATABASE_URL", store_url)
    get_settings.cache_clear()
    store = NetworkStore(store_url)
    try:
        sync_table_network(store, path)  # loaded once (its source recorded), then the schedule keeps it in step
        assert store.network_stats("school")["source"] == {"kind": "file", "path": str(path.resolve())}
    finally:
        store.close()
    source.change()
    result = kn_refresh(kn_id=None)
    school_run = result["synced"]["school"]
    assert school_run["mode"] == "incremental"
    assert {k: school_run["counts"][k] for k in ("instances_inserted", "instances_updated", "instances_deleted",
                                                 "links_inserted")} == {"instances_inserted": 1,
                                                                        "instances_updated": 1,
                                                                        "instances_deleted": 1, "links_inserted": 1}
    markdown = _artifact("kn-sync-school").data
    assert "| instances inserted | 1 |" in markdown and "| instances deleted | 1 |" in markdown

    # a file-bound network whose schema file is gone fails the run, naming it, after the others synced
    library = path.parent / "library"
    shutil.copytree(EXAMPLE.parent, library)
    store = NetworkStore(store_url)
    try:
        sync_named(str(library / "library.yaml"), store)
    finally:
        store.close()
    (library / "library.yaml").unlink()
    with pytest.raises(RuntimeError, match=r"sync failed for library: .*schema file .* is gone"):
        kn_refresh(kn_id=None, full_scan=True)
    full = _artifact("kn-sync-school")
    assert "full scan" in full.description and "| instances deleted | 1 |" in full.data  # the teacher deleted outright
    get_settings.cache_clear()

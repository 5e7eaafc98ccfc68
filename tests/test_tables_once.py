"""create_once (kgrag.tables_once): every engine gets its tables once — also a new engine of another database
that takes the memory (and so the ``id``) of one that is gone, which a set of engine ids took for the old one.

    .venv/bin/python -m pytest -q tests/test_tables_once.py
"""

from __future__ import annotations

import gc
from pathlib import Path

from sqlalchemy import Column, Integer, MetaData, Table, create_engine, inspect

from kgrag.tables_once import create_once

metadata = MetaData()
Table("kgrag_once_probe", metadata, Column("id", Integer, primary_key=True))


def test_each_engine_gets_its_tables_even_where_a_gone_one_had_its_id(tmp_path: Path) -> None:
    seen: set[int] = set()
    reused = 0
    for i in range(30):
        engine = create_engine(f"sqlite:///{tmp_path / f'db{i}.sqlite'}")
        reused += id(engine) in seen
        seen.add(id(engine))
        create_once(engine, metadata)
        create_once(engine, metadata)  # the second call is a no-op on the same engine
        assert inspect(engine).has_table("kgrag_once_probe"), i
        engine.dispose()
        del engine
        gc.collect()
    assert reused  # the case the test is about did happen (CPython hands a freed engine's memory to the next)


def test_after_runs_once_per_engine(tmp_path: Path) -> None:
    calls: list[str] = []
    engine = create_engine(f"sqlite:///{tmp_path / 'after.sqlite'}")
    other = MetaData()
    Table("kgrag_once_after", other, Column("id", Integer, primary_key=True))
    for _ in range(3):
        create_once(engine, other, after=lambda conn: calls.append("after"))
    assert calls == ["after"] and inspect(engine).has_table("kgrag_once_after")
    engine.dispose()

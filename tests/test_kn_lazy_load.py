"""A network's files read twice instead of held (``load_declarative(lazy=True)``, what ``kn load`` does): one pass
checks every row, the load reads the files again as it writes. The lazy reader yields what the eager one returns,
in its order, as often as it is iterated; the store loads the same network from either (the same rows, links
de-duplicated); a file changed between the check and the write fails the load and leaves the stored network as
it was.

    .venv/bin/python -m pytest -q tests/test_kn_lazy_load.py
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from sqlalchemy import func, select

from kgrag.config import get_settings
from kgrag.errors import KgragError
from kgrag.network.loaders.declarative import FileInstances, FileLinks, load_declarative
from kgrag.network.schema import tables as t
from kgrag.network.store import NetworkStore

TEMPLATE = Path(__file__).resolve().parents[1] / "kgrag" / "network" / "examples" / "library"


@pytest.fixture
def library(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KGRAG_WORK_DIR", str(tmp_path / "work"))
    get_settings.cache_clear()
    folder = tmp_path / "library"
    shutil.copytree(TEMPLATE, folder)
    yield folder / "library.yaml"
    get_settings.cache_clear()


def _rows(db: str) -> dict[str, list]:
    store = NetworkStore(db)
    try:
        with store.core.engine.connect() as conn:
            return {
                "instances": conn.execute(select(t.instances.c.object_type_id, t.instances.c.id,
                                                 t.instances.c.properties).order_by(t.instances.c.id)).all(),
                "links": conn.execute(select(t.links.c.relation_type_id, t.links.c.source_id, t.links.c.target_id)
                                      .order_by(t.links.c.source_id, t.links.c.target_id)).all(),
                "text": conn.execute(select(t.text_index.c.item_id, t.text_index.c.field, t.text_index.c.text)
                                     .order_by(t.text_index.c.item_id, t.text_index.c.field)).all(),
                "vectors": [conn.execute(select(func.count()).select_from(t.vectors)).scalar()],
            }
    finally:
        store.close()


def test_the_lazy_reader_yields_what_the_eager_one_returns(library: Path) -> None:
    network, instances, links = load_declarative(library)
    lazy_network, lazy_instances, lazy_links = load_declarative(library, lazy=True)
    assert isinstance(lazy_instances, FileInstances) and isinstance(lazy_links, FileLinks)
    assert lazy_network == network
    assert list(lazy_instances) == instances and list(lazy_instances) == instances  # again, from the files
    assert list(lazy_links) == links and len(lazy_links) == len(links) and len(lazy_instances) == len(instances)


def test_a_store_loads_the_same_network_from_either(library: Path, tmp_path: Path) -> None:
    links_file = library.parent / "links.csv"
    first = links_file.read_text(encoding="utf-8").splitlines()[1]
    links_file.write_text(links_file.read_text(encoding="utf-8").rstrip("\n") + f"\n{first}\n", encoding="utf-8")
    eager, lazy = f"sqlite:///{tmp_path / 'eager.db'}", f"sqlite:///{tmp_path / 'lazy.db'}"
    for db, is_lazy in ((eager, False), (lazy, True)):
        store = NetworkStore(db)
        stats = store.load(*load_declarative(library, lazy=is_lazy))
        assert stats.links == 43  # the repeated link written once
        store.close()
    assert _rows(lazy) == _rows(eager)


def test_a_file_changed_between_the_check_and_the_write_fails_the_load(library: Path, tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'kn.db'}"
    store = NetworkStore(db)
    try:
        store.load(*load_declarative(library))
        before = store.network_version("library")
        network, instances, links = load_declarative(library, lazy=True)
        authors = library.parent / "authors.csv"
        authors.write_text(authors.read_text(encoding="utf-8") + "a:late,A Late Author,1999\n", encoding="utf-8")
        with pytest.raises(KgragError, match="authors.csv: changed while the network was being loaded"):
            store.load(network, instances, links)
        assert store.network_version("library") == before
    finally:
        store.close()

"""The HTTP app uses the settings it is created with (``app.state.settings``), not the environment's."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from kgrag.api.app import create_app
from kgrag.config import Settings
from kgrag.network.loaders.demo import demo_network
from kgrag.network.store import NetworkStore
from kgrag.rank.sentence_embedder import Embedder


def test_network_routes_read_the_database_of_the_apps_settings(tmp_path: Path, work_settings: Settings) -> None:
    db_url = f"sqlite:///{tmp_path / 'other.db'}"
    assert db_url != work_settings.db_url  # the environment's default database stays empty
    store = NetworkStore(db_url, embedder=Embedder(cache_dir=tmp_path / "embeddings"))
    store.load(*demo_network())
    store.close()

    app = create_app(Settings(work_dir=tmp_path / "app-work", database_url=db_url))
    assert app.state.settings.db_url == db_url
    with TestClient(app) as client:
        listed = client.get("/api/kn/networks")
        assert listed.status_code == 200, listed.text
        assert [n["kn_id"] for n in listed.json()] == ["demo"]
        shown = client.get("/api/kn/networks/demo")
        assert shown.status_code == 200 and shown.json()["object_types"]
    default = NetworkStore(work_settings.db_url)
    assert default.list_networks() == []
    default.close()

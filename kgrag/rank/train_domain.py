"""Train domain word embeddings (gensim FastText over jieba tokens) on a corpus of texts.

    train_domain_embeddings(["心肌梗死又称心梗。", …], domain_model_dir(settings, "medical"))

Contract: :func:`corpus_sentences` splits texts into sentences (Chinese/English sentence punctuation and line
breaks) and tokenises them with :func:`kgrag.rank.tokenize.tokenize` (over a process pool for large corpora);
sentences of fewer than two tokens are dropped (they give FastText no context, so a word seen only alone would
keep its random initial vector; such words fall back to their trained n-grams instead).
:func:`train_domain_embeddings` trains a FastText model with a :class:`DomainEmbeddingConfig` and writes
``<out_dir>/meta.json`` + ``vectors.npz`` (format in :mod:`kgrag.rank.domain`; no pickle) into a temporary
folder beside ``out_dir`` that then replaces ``out_dir`` (readers see the old model or the new one, apart from
the instant between the two renames), and returns the loaded :class:`kgrag.rank.domain.DomainEmbedder`.
:func:`property_strings` / :func:`distinct_texts` turn instance properties into such a corpus (a network's texts
are read from the store by :mod:`kgrag.network.domain_vectors`; this module never reads a network);
:func:`alias_pairs` / :func:`alias_recall` measure how well the vectors find a name from an alias
("又称X" …) stated in its description.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from kgrag.config import Settings
from kgrag.fileio import write_json
from kgrag.rank.domain import META_FILE, VECTORS_FILE, DomainEmbedder, tokenize_many

if TYPE_CHECKING:  # pragma: no cover
    from gensim.models import FastText

__all__ = [
    "ALIAS_PATTERN",
    "DomainEmbeddingConfig",
    "alias_pairs",
    "alias_recall",
    "corpus_sentences",
    "domain_model_dir",
    "fit_fasttext",
    "distinct_texts",
    "nearest_names",
    "property_strings",
    "save_fasttext",
    "train_domain_embeddings",
]

FORMAT_VERSION = 1


class DomainEmbeddingConfig(BaseModel):
    """FastText training settings (gensim names).

    Defaults chosen on the medical alias benchmark (alias → disease name recall@5 among all disease names,
    2,426 pairs): skip-gram (0.345 vs CBOW's 0.294 with the same n-grams; CBOW also lets a shared first
    character dominate short words: 心梗 → 心瘾, 心悟 …), character n-grams 1–3 (2–4: 0.330; with CBOW
    3–4: 0.253), 100-d (200-d: +0.007 with CBOW), stop words dropped (keeping them: no change),
    ``min_count`` 2 (1: no change, 1.8× the vocabulary)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    vector_size: int = Field(default=100, ge=8, le=1024, description="vector width")
    window: int = Field(default=5, ge=1, le=50, description="context words either side")
    min_count: int = Field(default=2, ge=1, le=10_000, description="rarer words stay out of the vocabulary")
    min_n: int = Field(default=1, ge=1, le=8, description="shortest character n-gram (with the < > marks)")
    max_n: int = Field(default=3, ge=1, le=12, description="longest character n-gram")
    epochs: int = Field(default=5, ge=1, le=100)
    bucket: int = Field(default=200_000, ge=1_000, le=10_000_000, description="n-gram hash buckets")
    sg: bool = Field(default=True, description="skip-gram (else CBOW)")
    negative: int = Field(default=5, ge=1, le=50, description="negative samples")
    sample: float = Field(default=1e-3, ge=0.0, le=1.0, description="down-sampling of frequent words")
    stopwords: bool = Field(default=True, description="drop tokenize()'s stop words (training and encoding)")
    workers: int = Field(default=2, ge=1, le=64, description="training threads (results vary with >1)")
    seed: int = Field(default=0, ge=0, le=2**31 - 1)

    @model_validator(mode="after")
    def _ngram_range(self) -> DomainEmbeddingConfig:
        if self.max_n < self.min_n:
            raise ValueError(f"max_n ({self.max_n}) must be >= min_n ({self.min_n})")
        return self

    def fingerprint(self) -> str:
        """sha256 of the config's JSON dump (hex)."""
        return hashlib.sha256(self.model_dump_json().encode()).hexdigest()


# ---------------------------------------------------------------------------------------------- corpus
_SENTENCE_SPLIT = re.compile(r"[。！？；!?;\r\n\u2026]+|\.(?=\s|$)")


def split_sentences(text: str) -> list[str]:
    """``text`` cut at Chinese/English sentence punctuation and line breaks (a ``.`` only before whitespace or
    at the end, so ``3.5`` stays whole); blank pieces dropped."""
    return [piece for piece in (p.strip() for p in _SENTENCE_SPLIT.split(text)) if piece]


def corpus_sentences(
    texts: Iterable[str], *, stopwords: bool = True, processes: int | None = None
) -> list[list[str]]:
    """Tokenised sentences of ``texts`` (see the module docstring); jieba runs over a process pool when the
    corpus is large (:func:`kgrag.rank.domain.tokenize_many`)."""
    sentences = [s for text in texts if text for s in split_sentences(text)]
    return [tokens for tokens in tokenize_many(sentences, stopwords=stopwords, processes=processes)
            if len(tokens) >= 2]


# ---------------------------------------------------------------------------------------------- training
def fit_fasttext(sentences: Sequence[Sequence[str]], config: DomainEmbeddingConfig) -> FastText:
    """A gensim FastText model trained on ``sentences`` with ``config``; ``ValueError`` when no word occurs
    ``min_count`` times."""
    from gensim.models import FastText  # on use: gensim costs ~1 s at import

    model = FastText(
        vector_size=config.vector_size, window=config.window, min_count=config.min_count,
        min_n=config.min_n, max_n=config.max_n, epochs=config.epochs, bucket=config.bucket,
        sg=int(config.sg), negative=config.negative, sample=config.sample, workers=config.workers,
        seed=config.seed,
    )
    model.build_vocab(corpus_iterable=sentences)
    if len(model.wv) == 0:
        raise ValueError(f"no word occurs min_count={config.min_count} times in the corpus "
                         f"({len(sentences)} sentences)")
    model.train(corpus_iterable=sentences, total_examples=model.corpus_count, epochs=model.epochs)
    return model


def _weights_fingerprint(meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> str:
    digest = hashlib.sha256(json.dumps(meta, sort_keys=True, ensure_ascii=False).encode())
    for name in sorted(arrays):
        digest.update(name.encode())
        digest.update(np.ascontiguousarray(arrays[name]).tobytes())
    return digest.hexdigest()


def _replace_dir(tmp: Path, out_dir: Path) -> None:
    """Move the finished ``tmp`` folder onto ``out_dir`` (an old one is renamed away, then removed)."""
    old: Path | None = None
    if out_dir.exists():
        old = out_dir.with_name(f".{out_dir.name}.old-{os.getpid()}-{uuid.uuid4().hex[:8]}")
        os.rename(out_dir, old)
    try:
        os.rename(tmp, out_dir)
    except OSError:
        if old is not None:
            os.rename(old, out_dir)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def save_fasttext(
    model: FastText,
    out_dir: str | os.PathLike[str],
    config: DomainEmbeddingConfig,
    corpus: dict[str, Any] | None = None,
    timings: dict[str, float] | None = None,
) -> Path:
    """Write ``model``'s vectors as a :class:`DomainEmbedder` folder at ``out_dir`` (atomically; no pickle)
    and return the folder. ``corpus``/``timings`` are stored in ``meta.json`` as they are."""
    import gensim  # on use: gensim costs ~1 s at import

    wv = model.wv
    trained = np.zeros(wv.bucket, dtype=bool)
    if wv.buckets_word is not None and len(wv.buckets_word):
        trained[np.concatenate([np.asarray(b, dtype=np.int64) for b in wv.buckets_word])] = True
    arrays = {
        "vectors": np.asarray(wv.vectors, dtype=np.float32),
        "vectors_ngrams": np.asarray(wv.vectors_ngrams, dtype=np.float32),
        "trained_buckets": trained,
    }
    meta: dict[str, Any] = {
        "format": FORMAT_VERSION,
        "kind": "fasttext",
        "dim": int(wv.vector_size),
        "min_n": int(wv.min_n),
        "max_n": int(wv.max_n),
        "bucket": int(wv.bucket),
        "stopwords": config.stopwords,
        "config": config.model_dump(),
        "config_fingerprint": config.fingerprint(),
        "corpus": dict(corpus or {}),
        "vocab": list(wv.index_to_key),
        "counts": [int(wv.get_vecattr(w, "count")) for w in wv.index_to_key],
    }
    meta["fingerprint"] = _weights_fingerprint(meta, arrays)
    meta["gensim"] = gensim.__version__
    meta["timings"] = dict(timings or {})
    meta["created_at"] = time.time()
    out = Path(out_dir).expanduser().resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    tmp.mkdir()
    try:
        with open(tmp / VECTORS_FILE, "wb") as fh:
            np.savez(fh, **arrays, fingerprint=np.array(meta["fingerprint"]))
        write_json(tmp / META_FILE, meta)
        _replace_dir(tmp, out)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return out


def train_domain_embeddings(
    texts: Iterable[str],
    out_dir: str | os.PathLike[str],
    config: DomainEmbeddingConfig | None = None,
    *,
    log: Callable[[str], None] | None = None,
) -> DomainEmbedder:
    """Tokenise ``texts``, train FastText, write ``out_dir`` (module docstring), return the embedder."""
    config = config or DomainEmbeddingConfig()
    say = log or (lambda _line: None)
    texts = [text for text in texts if text]
    start = time.perf_counter()
    sentences = corpus_sentences(texts, stopwords=config.stopwords)
    tokenized = time.perf_counter()
    digest = hashlib.sha256()
    for text in texts:
        digest.update(text.encode())
        digest.update(b"\0")
    corpus = {
        "texts": len(texts),
        "characters": sum(map(len, texts)),
        "sentences": len(sentences),
        "tokens": sum(map(len, sentences)),
        "sha256": digest.hexdigest(),
    }
    say(f"corpus: {corpus['texts']} texts, {corpus['characters']} chars, {corpus['sentences']} sentences, "
        f"{corpus['tokens']} tokens ({tokenized - start:.1f} s)")
    if not sentences:
        raise ValueError("no sentence of two or more tokens in the corpus")
    model = fit_fasttext(sentences, config)
    trained = time.perf_counter()
    corpus["vocab"] = len(model.wv)
    say(f"fasttext: vocab {len(model.wv)}, {trained - tokenized:.1f} s")
    timings = {"tokenize_seconds": round(tokenized - start, 3),
               "train_seconds": round(trained - tokenized, 3)}
    folder = save_fasttext(model, out_dir, config, corpus, timings)
    return DomainEmbedder(folder)


# ---------------------------------------------------------------------------------------------- network corpus
def domain_model_dir(settings: Settings, kn_id: str) -> Path:
    """Where a network's domain embeddings live: ``<work_dir>/models/embeddings/<kn_id>``."""
    return settings.work_dir / "models" / "embeddings" / kn_id


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list | tuple):
        return [item for item in value if isinstance(item, str)]
    return []


def property_strings(properties: dict[str, Any] | None) -> dict[str, list[str]]:
    """``{property: [texts]}``: string properties and the strings of list properties, stripped, blanks dropped."""
    out = {}
    for key, value in (properties or {}).items():
        strings = [s.strip() for s in _strings(value) if s and s.strip()]
        if strings:
            out[key] = strings
    return out


def distinct_texts(records: Iterable[tuple[str, dict[str, list[str]]]]) -> list[str]:
    """The training corpus of ``(name, property_strings)`` records: every name and text, each distinct text
    once, in record order."""
    seen: dict[str, None] = {}
    for name, props in records:
        if name and name.strip():
            seen.setdefault(name.strip(), None)
        for strings in props.values():
            for text in strings:
                seen.setdefault(text, None)
    return list(seen)


# ---------------------------------------------------------------------------------------------- evaluation
#: "X，又称Y" and its kin: the alias (Chinese letters, digits, Latin) after the marker
ALIAS_PATTERN = re.compile(
    r"(?:又称|又名|俗称|简称|亦称|也称|别名|别称)(?:之为|为|是|作)?[:：]?\s*[“\"「『(（]?"
    r"([\u4e00-\u9fffA-Za-z0-9\-]{2,16})"
)


def alias_pairs(records: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """Distinct ``(alias, name)`` pairs from ``(name, text)`` records whose text says what else the name is
    called (:data:`ALIAS_PATTERN`; "A或B" gives both); an alias equal to the name is skipped."""
    pairs: dict[tuple[str, str], None] = {}
    for name, text in records:
        for match in ALIAS_PATTERN.finditer(text or ""):
            for alias in match.group(1).split("或"):  # "又称A或B": both
                if len(alias) >= 2 and alias != name:
                    pairs.setdefault((alias, name), None)
    return list(pairs)


def alias_recall(
    embedder: DomainEmbedder | Any,
    pairs: Sequence[tuple[str, str]],
    names: Sequence[str],
    ks: Sequence[int] = (1, 5, 10),
) -> dict[str, Any]:
    """Recall@k of each pair's name among the ``names`` nearest (cosine) to its alias; a name equal to the
    alias is not a candidate. Pairs whose name is not in ``names`` are skipped."""
    names = list(dict.fromkeys(names))
    where = {name: i for i, name in enumerate(names)}
    pairs = [(a, n) for a, n in pairs if n in where]
    matrix = embedder.encode(names).astype(np.float64)
    queries = embedder.encode([a for a, _ in pairs]).astype(np.float64) if pairs else np.zeros((0, 1))
    hits = dict.fromkeys(ks, 0)
    ranks = []
    for (alias, name), q in zip(pairs, queries, strict=True):
        scores = (matrix * q).sum(axis=1)
        own = where.get(alias)
        if own is not None:
            scores[own] = -np.inf
        rank = int((scores > scores[where[name]]).sum()) + 1
        ranks.append(rank)
        for k in ks:
            hits[k] += rank <= k
    n = len(pairs)
    return {"pairs": n, **{f"recall@{k}": (hits[k] / n if n else 0.0) for k in ks},
            "median_rank": float(np.median(ranks)) if ranks else None}


def nearest_names(
    embedder: DomainEmbedder | Any, probes: Sequence[str], names: Sequence[str], k: int = 5
) -> list[dict[str, Any]]:
    """For each probe the ``k`` names with the highest ``embedder.similarity`` (ties by name), a probe equal
    to a name excluded: rows ``{"probe", "rank", "name", "cosine"}``."""
    names = list(dict.fromkeys(names))
    rows = []
    for probe in probes:
        scores = embedder.similarity(probe, names)
        order = sorted((i for i in range(len(names)) if names[i] != probe),
                       key=lambda i: (-scores[i], names[i]))
        for rank, i in enumerate(order[:k], start=1):
            rows.append({"probe": probe, "rank": rank, "name": names[i],
                         "cosine": round(float(scores[i]), 4)})
    return rows

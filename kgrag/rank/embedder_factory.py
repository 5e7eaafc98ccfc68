"""One entry point for every text embedder: sentence-transformers models and domain FastText vectors.

    make_embedder("fasttext:work/models/embeddings/medical").encode(["心肌梗死"])  # (1, dim) float32

Contract: :func:`make_embedder` turns a model name into an embedder with the :class:`TextEmbedder` surface.
A name ``fasttext:<folder>`` or ``fasttext:<folder>@<fingerprint prefix>`` (what
:attr:`kgrag.rank.domain.DomainEmbedder.model_name` gives) loads the
:class:`~kgrag.rank.domain.DomainEmbedder` in ``<folder>`` — one instance per folder and process, reloaded
when the folder's ``meta.json`` changes (a retrain); a missing folder raises ``FileNotFoundError``, and a
fingerprint that the folder's weights do not start with raises ``ValueError`` (vectors made with other weights
would not be comparable: re-embed them).
Any other name gives ``kgrag.rank.sentence_embedder.Embedder(name, cache_dir=cache_dir)``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from kgrag.rank.domain import META_FILE, PREFIX, DomainEmbedder
from kgrag.rank.sentence_embedder import Embedder, EmbedderStats
from kgrag.versioned import VersionedCache

__all__ = ["TextEmbedder", "clear_cache", "make_embedder", "parse_fasttext_name"]


@runtime_checkable
class TextEmbedder(Protocol):
    """What callers of an embedder rely on (``Embedder`` and ``DomainEmbedder`` both provide it). Note that
    ``isinstance(x, TextEmbedder)`` reads ``x.dim``, which makes a not-yet-loaded ``Embedder`` load its
    model."""

    model_name: str
    stats: EmbedderStats

    @property
    def dim(self) -> int: ...

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray: ...

    def encode_one(self, text: str) -> np.ndarray: ...

    def encode_query(self, text: str) -> np.ndarray: ...

    def similarity(self, query: str, docs: Sequence[str]) -> np.ndarray: ...

    def compact(self) -> None: ...


def _meta_mtime(folder: Path) -> int | None:
    try:
        return (folder / META_FILE).stat().st_mtime_ns
    except OSError:
        return None


#: the domain embedders, one per folder, loaded again when its meta.json changes (a retrain)
_domain: VersionedCache[Path, DomainEmbedder] = VersionedCache(_meta_mtime, DomainEmbedder)
_HEX = re.compile(r"[0-9a-f]{4,64}")


def parse_fasttext_name(name: str) -> tuple[Path, str | None]:
    """``(folder, fingerprint prefix or None)`` of a ``fasttext:<folder>[@<fingerprint>]`` name: the folder
    resolved against the working directory, the fingerprint 4–64 lowercase hex digits."""
    if not name.startswith(PREFIX):
        raise ValueError(f"not a fasttext model name: {name!r}")
    rest = name[len(PREFIX):]
    folder, sep, fingerprint = rest.rpartition("@")
    if not sep or not _HEX.fullmatch(fingerprint):  # "@" inside a folder name, not a fingerprint
        folder, fingerprint = rest, ""
    if not folder:
        raise ValueError(f"no folder in model name {name!r} (expected fasttext:<folder>[@<fingerprint>])")
    return Path(folder).expanduser().resolve(), fingerprint or None


def _load_domain(name: str) -> DomainEmbedder:
    folder, fingerprint = parse_fasttext_name(name)
    meta = folder / META_FILE
    if not folder.is_dir() or not meta.is_file():
        raise FileNotFoundError(
            f"embedder {name!r}: no domain embedding model in {folder} "
            "(train it with `python -m flows.train_embeddings --kn-id <kn_id>`)"
        )
    embedder = _domain.get(folder)
    if fingerprint is not None and not embedder.fingerprint.startswith(fingerprint):
        raise ValueError(
            f"embedder {name!r}: {folder} now holds weights {embedder.fingerprint[:12]}, not {fingerprint} "
            "(the model was retrained; re-embed what the old weights encoded, e.g. reload the network)"
        )
    return embedder


def make_embedder(name: str, cache_dir: str | os.PathLike[str] | None = None) -> TextEmbedder:
    """The embedder for model ``name`` (see the module docstring); ``cache_dir`` only matters for
    sentence-transformers models (their on-disk vector cache)."""
    if name.startswith(PREFIX):
        return _load_domain(name)
    from kgrag.config import get_settings

    settings = get_settings()
    return Embedder(name, cache_dir=cache_dir, query_encoder=settings.query_encoder,
                    models_dir=settings.onnx_dir)


def clear_cache() -> None:
    """Forget the loaded domain embedders (tests; a retrain is noticed without this)."""
    _domain.close()

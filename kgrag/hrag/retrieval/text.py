"""Text embeddings the retriever reads: entity names, relation names and (masked) questions.

Made with the project's embedder (offline MiniLM by default). Relation vectors are computed once per vocabulary
and kept in ``<dataset work dir>/hrag/text_<model>_<fingerprint>.npz``; entity vectors are
:class:`~kgrag.hrag.retrieval.entity_vectors.EntityVectors`, computed lazily for the entities a question touches and kept
in a map shared by processes (:mod:`flows.text_embeddings` fills a small graph's map at once, as tasks). The
fingerprint is the graph's names fingerprint (stored at import) with the model name, so a changed graph or model
gets new vectors. Question vectors go through the embedder's own disk cache (many questions share one masked
template).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kgrag.graph.csr import CSRGraph
from kgrag.hrag.retrieval.entity_vectors import EntityVectors
from kgrag.hrag.retrieval.questions import masked_text
from kgrag.rank.sentence_embedder import Embedder

__all__ = ["NAME_BLOCK", "TextEmbeddings", "QuestionTokens", "encode_names", "relation_text", "text_file"]

MAX_QUESTION_TOKENS = 32


#: names per model call when encoding a vocabulary: fixed blocks, so a block's vectors do not depend on how the
#: blocks are spread over tasks (sentence-transformers sorts a call's texts by length into its batches)
NAME_BLOCK = 8192


#: names per ONNX call (sorted by length first: each call pads to its longest name)
ONNX_BATCH = 64


def encode_names(embedder: Embedder, names: Sequence[str], block: int = NAME_BLOCK) -> np.ndarray:
    """Unit vectors of ``names`` (float16), the model directly, in calls of ``block`` names (40k+ names are one
    batch job, not worth the per-text disk cache). Through the embedder's ONNX batch encoder when it has one
    (:meth:`~kgrag.rank.sentence_embedder.Embedder.batch_encoder`: the same vectors, cosine ≥ 0.9999, 2.3x as
    fast on 2 cores), else the torch model."""
    names = list(names)
    onnx = embedder.batch_encoder()
    if onnx is not None:
        out = np.zeros((len(names), embedder.dim), dtype=np.float16)
        order = np.argsort([len(n) for n in names], kind="stable")
        for start in range(0, len(names), ONNX_BATCH):
            rows = order[start : start + ONNX_BATCH]
            out[rows] = onnx.encode([names[i] for i in rows])
        return out
    out = np.zeros((len(names), embedder.dim), dtype=np.float16)
    for start in range(0, len(names), block):
        out[start : start + block] = embedder.model.encode(names[start : start + block], batch_size=256,
                                                           convert_to_numpy=True, normalize_embeddings=True,
                                                           show_progress_bar=False)
    return out


def text_file(graph: CSRGraph, folder: Path, model_name: str) -> Path:
    """Where the relation vectors of ``graph`` by ``model_name`` are kept (a fingerprint of model and names)."""
    digest = hashlib.sha256(f"{model_name}\n{graph.names_fingerprint}".encode())
    return Path(folder) / f"text_{re.sub(r'[^A-Za-z0-9]+', '-', model_name)}_{digest.hexdigest()[:16]}.npz"


def relation_text(relation: str) -> str:
    """A relation name as words: ``film.film.directed_by`` / ``directed_by`` → ``film film directed by``."""
    return re.sub(r"[._/\s]+", " ", relation).strip()


@dataclass
class QuestionTokens:
    """Contextual token vectors of (masked) questions, padded: ``vectors`` (Q, L, D) float16, ``mask`` (Q, L)."""

    vectors: np.ndarray
    mask: np.ndarray

    def __len__(self) -> int:
        return int(self.vectors.shape[0])

    def __getitem__(self, rows) -> QuestionTokens:
        return QuestionTokens(self.vectors[rows], self.mask[rows])


@dataclass
class TextEmbeddings:
    entities: EntityVectors  # indexed like a float16 (entities, dim) array; zero rows for unnamed entities (CVTs)
    relations: np.ndarray  # float32 (relations, dim)
    embedder: Embedder

    @property
    def dim(self) -> int:
        return int(self.relations.shape[1])

    def questions(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of the questions with their topic spans masked (see :func:`masked_text`)."""
        return self.embedder.encode([masked_text(t) for t in texts])

    def question_tokens(self, texts: Sequence[str], max_tokens: int = MAX_QUESTION_TOKENS) -> QuestionTokens:
        """The model's contextual token vectors of the masked questions (word order kept: which relation a
        question names first), at most ``max_tokens`` each; each distinct masked text is encoded once."""
        masked = [masked_text(t) for t in texts]
        unique = list(dict.fromkeys(masked))
        out = np.zeros((len(masked), max_tokens, self.dim), dtype=np.float16)
        mask = np.zeros((len(masked), max_tokens), dtype=bool)
        if not unique:
            return QuestionTokens(out, mask)
        encoded = self.embedder.model.encode(unique, output_value="token_embeddings", batch_size=128,
                                             convert_to_numpy=False, show_progress_bar=False)
        row = {text: i for i, text in enumerate(unique)}
        for i, text in enumerate(masked):
            vectors = encoded[row[text]][:max_tokens].float().cpu().numpy()
            out[i, : len(vectors)] = vectors
            mask[i, : len(vectors)] = True
        return QuestionTokens(out, mask)

    @classmethod
    def for_graph(cls, graph: CSRGraph, folder: Path, embedder: Embedder | None = None) -> TextEmbeddings:
        """The graph's relation vectors from their file, else computed and saved; its entity vectors lazy (see
        :class:`~kgrag.hrag.retrieval.entity_vectors.EntityVectors`: nothing is encoded until a row is read)."""
        embedder = embedder or Embedder.from_settings()
        path = text_file(graph, folder, embedder.model_name)
        if path.is_file():
            with np.load(path) as data:
                relations = data["relations"]
        else:
            relations = embedder.encode([relation_text(r) for r in graph.relations])
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(path.name + f".tmp{os.getpid()}.npz")
            np.savez(tmp, relations=relations)
            os.replace(tmp, path)
        entities = EntityVectors(graph, folder, embedder.model_name, int(relations.shape[1]),
                                 lambda names: encode_names(embedder, names))
        return cls(entities, relations, embedder)

"""The self-supervised intent ranker: questions synthesised from the network (:mod:`kgrag.agent.training.synthesise`)
→ one centroid per schema element, in the intent ranker's feature space.

    ranker = SelfRanker.train(questions, labels, topics, IntentConfig())      # seconds, any number of labels
    ranker.similarities("where was Ⓧ born", ["rel:people.person.place_of_birth", …])

Features are :class:`kgrag.agent.kn.intent.IntentRanker`'s (the topic masked, character n-grams, TF-IDF,
l2-normalised). A label's centroid is the mean of its synthetic questions' vectors, l2-normalised (Rocchio); a
question scores each label by the cosine to its centroid. A nearest-centroid model trains in one pass and keeps
one sparse row per label, so a schema of 12,000 (relation, direction) labels trains in seconds, where the
multinomial regression of the labelled ranker would need a dense n-grams × labels matrix. The agent adds these
similarities to the zero-shot ranking's signals (:mod:`kgrag.agent.kn.zero_shot`).

Files: ``self_ranker.npz`` (the CSR centroids, idf) and ``self_ranker.json`` (config, labels, vocabulary,
fingerprint, metrics), written atomically; nothing is pickled.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from scipy import sparse

from kgrag.agent.kn.intent import (
    KIND,
    IntentConfig,
    fit_tfidf,
    latest_run,
    question_grams,
    read_model,
    tfidf_vector,
    write_model,
)
from kgrag.config import Settings

__all__ = ["SelfRanker", "latest_self_dir", "load_latest_self", "self_pointer"]



class SelfRanker:
    def __init__(self, config: IntentConfig, labels: Sequence[str], vocabulary: Sequence[str], idf: np.ndarray,
                 centroids: sparse.csr_matrix, metrics: dict | None = None) -> None:
        self.config = config
        self.labels = list(labels)
        self.vocabulary = list(vocabulary)
        self._index = {g: i for i, g in enumerate(self.vocabulary)}
        self._label_row = {lab: i for i, lab in enumerate(self.labels)}
        self.idf = np.asarray(idf, dtype=np.float32)
        self.centroids = sparse.csr_matrix(centroids, dtype=np.float32)  # (labels, features)
        self._columns = self.centroids.T.tocsr()  # (features, labels): a question's n-grams pick rows
        self.metrics = dict(metrics or {})
        if self.centroids.shape != (len(self.labels), len(self.vocabulary)):
            raise ValueError(f"centroids {self.centroids.shape} do not match {len(self.labels)} labels × "
                             f"{len(self.vocabulary)} n-grams")
        h = hashlib.sha256(config.fingerprint().encode())
        for part in (json.dumps(self.labels).encode(), self.centroids.data.tobytes(),
                     self.centroids.indices.tobytes(), self.idf.tobytes()):
            h.update(part)
        self.fingerprint = h.hexdigest()[:12]

    def features(self, question: str, topic: str | None = None) -> list[str]:
        return question_grams(self.config, question, topic)

    @classmethod
    def train(cls, questions: Sequence[str], labels: Sequence[str], topics: Sequence[str | None],
              config: IntentConfig | None = None) -> SelfRanker:
        cfg = config or IntentConfig()
        if not (len(questions) == len(labels) == len(topics)) or not questions:
            raise ValueError("questions, labels and topics must be non-empty and of the same length")
        x, vocab, idf = fit_tfidf(cfg, questions, topics)
        names = sorted(set(labels))
        row = {lab: i for i, lab in enumerate(names)}
        y = np.fromiter((row[lab] for lab in labels), np.int64, len(labels))
        members = sparse.csr_matrix((np.ones(len(y), np.float32), (y, np.arange(len(y)))),
                                    shape=(len(names), len(y)))
        sums = sparse.csr_matrix(members @ x)
        norms = np.sqrt(np.asarray(sums.multiply(sums).sum(axis=1)).ravel())
        centroids = sparse.diags(1.0 / np.maximum(norms, 1e-9)) @ sums
        metrics = {"train_questions": len(questions), "labels": len(names), "n_features": len(vocab)}
        return cls(cfg, names, vocab, idf, sparse.csr_matrix(centroids), metrics)

    def vector(self, question: str, topic: str | None = None) -> tuple[np.ndarray, np.ndarray]:
        return tfidf_vector(self.features(question, topic), self._index, self.idf)

    def rows(self, labels: Sequence[str]) -> np.ndarray:
        """The centroid row of each of ``labels`` (-1 for a label it was not trained on)."""
        return np.array([self._label_row.get(lab, -1) for lab in labels], dtype=np.int64)

    def label_scores(self, question: str, topic: str | None = None) -> np.ndarray:
        """Cosine of the question to every label's centroid, in ``self.labels`` order."""
        idx, values = self.vector(question, topic)
        if idx.size == 0:
            return np.zeros(len(self.labels), dtype=np.float32)
        return np.asarray(self._columns[idx].T @ values).ravel()

    def similarities(self, question: str, labels: Sequence[str], topic: str | None = None) -> np.ndarray:
        """Cosine of the question to each of ``labels``' centroids (0 for a label it was not trained on)."""
        return np.append(self.label_scores(question, topic), 0.0)[self.rows(labels)]

    # ---- persistence ------------------------------------------------------------------------------------
    def save(self, folder: str | Path) -> Path:
        c = self.centroids
        return write_model(folder, "self_ranker", {"data": c.data, "indices": c.indices, "indptr": c.indptr,
                                                   "shape": np.asarray(c.shape), "idf": self.idf}, {
            "fingerprint": self.fingerprint, "config": self.config.model_dump(), "labels": self.labels,
            "metrics": self.metrics, "vocabulary": self.vocabulary})

    @classmethod
    def load(cls, folder: str | Path) -> SelfRanker:
        meta, a = read_model(folder, "self_ranker")
        centroids = sparse.csr_matrix((a["data"], a["indices"], a["indptr"]), shape=tuple(a["shape"]))
        ranker = cls(IntentConfig(**meta["config"]), meta["labels"], meta["vocabulary"], a["idf"], centroids,
                     meta.get("metrics"))
        if ranker.fingerprint != meta["fingerprint"]:
            raise ValueError(f"{folder}: fingerprint mismatch (files from different runs?)")
        return ranker


# ---- the latest run -----------------------------------------------------------------------------------------
def self_pointer(settings: Settings, kn_id: str) -> Path:
    """``checkpoints/intent/<kn_id>-self-latest.json``: names the self-supervised run that trained last."""
    return settings.checkpoint_dir / KIND / f"{kn_id}-self-latest.json"


def latest_self_dir(settings: Settings, kn_id: str) -> Path | None:
    return latest_run(self_pointer(settings, kn_id), "self_ranker.json")


def load_latest_self(settings: Settings, kn_id: str) -> SelfRanker | None:
    """The self-supervised ranker trained last for ``kn_id`` (``kgrag train-intent --source self``), or None."""
    folder = latest_self_dir(settings, kn_id)
    return SelfRanker.load(folder) if folder is not None else None

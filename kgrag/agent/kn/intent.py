"""The trained question → schema-element ranker: which Disease property (``prop:cure_way``) or relation type
(``rel:has_symptom``, inbound ``rel_in:has_symptom``) a medical question asks for.

Model: the question, NFKC-normalised and lower-cased, with the linked topic's name replaced by a placeholder
(``Ⓧ``; the topic is the stored name the agent linked, at training time the Cypher's name), cut into
character n-grams (``ngram_min``–``ngram_max``, with ``^``/``$`` boundary marks), TF-IDF weighted (sublinear
tf, smooth idf, l2 norm) and scored by a multinomial logistic regression (scikit-learn's ``saga``). Labels
come back best first with their softmax probabilities. ``rank`` can narrow the labels to those the schema
allows for the topic's type (``topic_type``: a Symptom topic can only be ``rel_in:has_symptom``) and to the
labels the caller can answer (``allowed``: e.g. the relations the topic has links for), renormalising.

On the CE-Prompt validation split it gets accuracy@1 ≈ 0.87 (@3 ≈ 0.97), ≈ 0.88 with the topic-type filter:
the labels' noise caps any text-only classifier near there (see :func:`kgrag.agent.training.train_intent.noise_bounds`
and ``annotation_oracle``); masking, word n-grams, SVMs and ensembles all land within ±0.3 points.

Inference is plain numpy (no scikit-learn object is kept): ``save(folder)`` writes ``ranker.npz`` (weights,
bias, idf) and ``ranker.json`` (config, labels, n-gram vocabulary, fingerprint, metrics), both atomically, and
``load(folder)`` reads them back; nothing is pickled. ``rank`` costs ~0.1 ms per question.
``fingerprint`` hashes the config with the trained arrays (the checkpoint folder is named by the config's).

Run: ``python -m flows.train_intent`` trains, evaluates and saves one (see :mod:`kgrag.agent.training.train_intent`).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from kgrag.config import Settings
from kgrag.fileio import atomic_write, write_json
from kgrag.network.loaders.medical import MEDICAL_RELATION_TYPES
from kgrag.text import plain_text

__all__ = ["DATASET", "KIND", "MASK", "RELATION_SCHEMA", "IntentConfig", "IntentRanker", "char_ngrams", "fit_tfidf",
           "label_topic_type", "latest_intent_dir", "latest_run", "load_latest_intent", "mask_question",
           "normalize_text", "question_grams", "read_model", "tfidf_vector", "write_model"]

#: the labelled questions a ranker is trained on (CE-Prompt's, on the medical network) and its checkpoint kind
DATASET = "medical"
KIND = "intent"
#: relation type -> (source type, target type): the medical network's relations between a Disease and another type
#: (what a label's topic type is read from)
RELATION_SCHEMA: dict[str, tuple[str, str]] = {rid: (source, target)
                                               for rid, (source, target, _, _) in MEDICAL_RELATION_TYPES.items()
                                               if source == "Disease"}

MASK = "Ⓧ"
FORMAT_VERSION = 1


class IntentConfig(BaseModel):
    """Everything that decides a trained ranker (and its train/validation split); ``fingerprint`` names its
    checkpoint folder."""

    model_config = ConfigDict(extra="forbid")

    # features
    ngram_min: int = Field(1, ge=1, le=8)
    ngram_max: int = Field(4, ge=1, le=8)
    boundaries: bool = Field(True, description="mark the start/end of the question (^ … $) for the n-grams")
    mask_topic: bool = Field(True, description="replace the topic's name in the question by a placeholder")
    min_df: int = Field(1, ge=1, le=1000, description="n-grams seen in fewer train questions are dropped")
    max_features: int = Field(0, ge=0, le=5_000_000, description="keep the most frequent n-grams; 0 = all")
    # logistic regression
    C: float = Field(20.0, gt=0, le=1e6, description="inverse l2 regularisation strength")
    max_iter: int = Field(300, ge=1, le=100_000)
    tol: float = Field(1e-3, gt=0, le=1.0)
    # data
    validation_fraction: float = Field(0.1, gt=0, lt=0.5,
                                       description="share of the distinct question texts held out")
    max_train_questions: int = Field(0, ge=0, le=10_000_000, description="subsample the train split; 0 = all")
    seed: int | None = Field(None, description="split and solver seed; None = Settings.seed")

    @model_validator(mode="after")
    def _ngram_range(self) -> IntentConfig:
        if self.ngram_min > self.ngram_max:
            raise ValueError(f"ngram_min {self.ngram_min} > ngram_max {self.ngram_max}")
        return self

    def fingerprint(self) -> str:
        return hashlib.sha256(json.dumps(self.model_dump(), sort_keys=True).encode()).hexdigest()[:12]


#: the question as the ranker reads it: NFKC (full-width → half-width), lower case, whitespace runs → one space,
#: stripped (:func:`kgrag.text.plain_text`)
normalize_text = plain_text


def mask_question(question: str, topic: str | None) -> str:
    """The normalised question with every occurrence of the (normalised) topic replaced by :data:`MASK`."""
    text = normalize_text(question)
    if topic:
        t = normalize_text(topic)
        if t:
            text = text.replace(t, MASK)
    return text


def label_topic_type(label: str) -> str:
    """The node type a label's topic has: ``Disease`` for properties, the relation's source (``rel:``) or
    target (``rel_in:``) type."""
    kind, _, element = label.partition(":")
    if kind == "prop":
        return "Disease"
    source, target = RELATION_SCHEMA.get(element, ("", ""))
    return source if kind == "rel" else target


def char_ngrams(text: str, lo: int, hi: int, boundaries: bool) -> list[str]:
    if boundaries:
        text = f"^{text}$"
    return [text[i : i + n] for n in range(lo, hi + 1) for i in range(len(text) - n + 1)]


def question_grams(cfg: IntentConfig, question: str, topic: str | None = None) -> list[str]:
    """The character n-grams of one question (its topic masked when ``cfg.mask_topic``): what both rankers read."""
    text = mask_question(question, topic) if cfg.mask_topic else normalize_text(question)
    return char_ngrams(text, cfg.ngram_min, cfg.ngram_max, cfg.boundaries)


def fit_tfidf(cfg: IntentConfig, questions: Sequence[str], topics: Sequence[str | None]
              ) -> tuple[Any, list[str], np.ndarray]:
    """``(sparse TF-IDF rows, vocabulary, idf)`` of the questions (sublinear tf, l2 rows), scikit-learn's fit."""
    from sklearn.feature_extraction.text import TfidfVectorizer  # on use: ~3 s at import

    vectorizer = TfidfVectorizer(analyzer=lambda pair: question_grams(cfg, *pair), sublinear_tf=True,
                                 min_df=cfg.min_df, max_features=cfg.max_features or None, dtype=np.float32)
    x = vectorizer.fit_transform(list(zip(questions, topics, strict=True)))
    vocab = [""] * len(vectorizer.vocabulary_)
    for gram, i in vectorizer.vocabulary_.items():
        vocab[i] = gram
    return x, vocab, vectorizer.idf_


def tfidf_vector(grams: Iterable[str], index: dict[str, int], idf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(feature indices, tf-idf values)`` of one question's n-grams as :func:`fit_tfidf` weighs them
    (l2-normalised; n-grams outside ``index`` dropped)."""
    counts = Counter(i for g in grams if (i := index.get(g)) is not None)
    if not counts:
        return np.zeros(0, np.int64), np.zeros(0, np.float32)
    idx = np.fromiter(counts, np.int64, len(counts))
    tf = np.fromiter((1.0 + math.log(c) for c in counts.values()), np.float32, len(counts))
    values = tf * idf[idx]
    return idx, values / np.linalg.norm(values)


def write_model(folder: str | Path, stem: str, arrays: dict[str, np.ndarray], meta: dict) -> Path:
    """``<stem>.npz`` (``arrays``) and ``<stem>.json`` (``meta`` + the format) into ``folder``, each atomically."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)

    def write_npz(tmp: Path) -> None:
        with tmp.open("wb") as fh:
            np.savez(fh, **arrays)

    atomic_write(folder / f"{stem}.npz", write_npz)
    write_json(folder / f"{stem}.json", {"format": FORMAT_VERSION, **meta})
    return folder


def read_model(folder: str | Path, stem: str) -> tuple[dict, dict[str, np.ndarray]]:
    """``(meta, arrays)`` written by :func:`write_model` (``ValueError`` for another format)."""
    folder = Path(folder)
    meta = json.loads((folder / f"{stem}.json").read_text(encoding="utf-8"))
    if meta.get("format") != FORMAT_VERSION:
        raise ValueError(f"{folder}: unknown {stem} format {meta.get('format')!r}")
    with np.load(folder / f"{stem}.npz", allow_pickle=False) as npz:
        return meta, {k: npz[k] for k in npz.files}


def latest_run(pointer: Path, marker: str) -> Path | None:
    """The run folder a ``<name>-latest.json`` pointer names, when it holds ``marker`` (else None)."""
    if not pointer.is_file():
        return None
    folder = Path(json.loads(pointer.read_text())["run_dir"])
    return folder if (folder / marker).is_file() else None


def _digest(*parts: bytes) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p)
    return h.hexdigest()[:12]


class IntentRanker:
    """A trained ranker (build with :meth:`train` or :meth:`load`)."""

    def __init__(self, config: IntentConfig, labels: Sequence[str], vocabulary: Sequence[str],
                 idf: np.ndarray, weights: np.ndarray, bias: np.ndarray, metrics: dict | None = None,
                 topic_prior: dict[str, int] | None = None) -> None:
        self.config = config
        self.labels = list(labels)
        self.vocabulary = list(vocabulary)
        self._index = {g: i for i, g in enumerate(self.vocabulary)}
        self.idf = np.asarray(idf, dtype=np.float32)
        self.weights = np.ascontiguousarray(weights, dtype=np.float32)  # (n_features, n_labels)
        self.bias = np.asarray(bias, dtype=np.float32)
        self.metrics = dict(metrics or {})
        #: how often each topic name was the topic of a training question (the agent's linking prior)
        self.topic_prior = dict(topic_prior or {})
        self._label_types = [label_topic_type(lab) for lab in self.labels]
        shape = (len(self.vocabulary), len(self.labels))
        if self.weights.shape != shape or self.bias.shape != shape[1:]:
            raise ValueError(f"weights {self.weights.shape} / bias {self.bias.shape} do not match "
                             f"{len(self.vocabulary)} n-grams × {len(self.labels)} labels")
        self.fingerprint = _digest(config.fingerprint().encode(), json.dumps(self.labels).encode(),
                                   self.weights.tobytes(), self.bias.tobytes(), self.idf.tobytes())

    # ---- features ---------------------------------------------------------------------------------------
    def features(self, question: str, topic: str | None = None) -> list[str]:
        return question_grams(self.config, question, topic)

    # ---- training ---------------------------------------------------------------------------------------
    @classmethod
    def train(cls, questions: Sequence[str], labels: Sequence[str], config: IntentConfig | None = None,
              topics: Sequence[str | None] | None = None) -> IntentRanker:
        """Fit on ``questions`` with their ``labels`` (and each question's topic name, masked out)."""
        # on use: scikit-learn costs ~3 s at import; the online agent only loads a trained ranker
        from sklearn.linear_model import LogisticRegression

        cfg = config or IntentConfig()
        if len(questions) != len(labels) or (topics is not None and len(topics) != len(questions)):
            raise ValueError("questions, labels (and topics) must have the same length")
        if len(set(labels)) < 2:
            raise ValueError("training needs at least two distinct labels")
        x, vocab, idf = fit_tfidf(cfg, questions, topics if topics is not None else [None] * len(questions))
        model = LogisticRegression(C=cfg.C, solver="saga", max_iter=cfg.max_iter, tol=cfg.tol,
                                   random_state=cfg.seed or 0)
        model.fit(x, np.asarray(labels))
        coef, intercept = model.coef_, model.intercept_
        if coef.shape[0] == 1:  # two labels: sigmoid(z) == softmax([-z/2, z/2])
            coef = np.vstack([-coef / 2, coef / 2])
            intercept = np.array([-intercept[0] / 2, intercept[0] / 2])
        metrics = {"train_questions": len(questions), "n_features": len(vocab),
                   "solver_iterations": int(np.max(model.n_iter_))}
        prior = Counter(t for t in topics or () if t)
        return cls(cfg, [str(c) for c in model.classes_], vocab, idf, coef.T, intercept, metrics,
                   dict(prior.most_common()))

    # ---- inference --------------------------------------------------------------------------------------
    def vector(self, question: str, topic: str | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(feature indices, tf-idf values)`` of one question (l2-normalised; unknown n-grams dropped)."""
        return tfidf_vector(self.features(question, topic), self._index, self.idf)

    def scores(self, question: str, topic: str | None = None) -> np.ndarray:
        """The raw label scores (logits) of one question, in ``self.labels`` order."""
        idx, values = self.vector(question, topic)
        return values @ self.weights[idx] + self.bias if idx.size else self.bias.copy()

    def probabilities(self, question: str, topic: str | None = None, topic_type: str | None = None,
                      allowed: Iterable[str] | None = None) -> np.ndarray:
        """Softmax over the labels, zero for those ``topic_type`` / ``allowed`` exclude (then renormalised;
        when that would exclude every label, the unrestricted probabilities)."""
        z = self.scores(question, topic).astype(np.float64)
        p = np.exp(z - z.max())
        p /= p.sum()
        keep = np.ones(len(self.labels), bool)
        if topic_type:
            keep &= np.array([t == topic_type for t in self._label_types])
        if allowed is not None:
            allowed = set(allowed)
            keep &= np.array([lab in allowed for lab in self.labels])
        if keep.any() and not keep.all():
            q = np.where(keep, p, 0.0)
            if q.sum() > 0:
                return q / q.sum()
        return p

    def rank(self, question: str, topic: str | None = None, topic_type: str | None = None,
             allowed: Iterable[str] | None = None, top: int | None = None) -> list[tuple[str, float]]:
        """``(label, probability)`` best first (all labels, or the best ``top``); excluded labels come last
        with probability 0. ``topic`` is the linked topic's stored name (masked out of the question),
        ``topic_type`` its object type and ``allowed`` the labels the caller can answer for it."""
        p = self.probabilities(question, topic, topic_type, allowed)
        order = np.argsort(-p, kind="stable")
        if top is not None:
            order = order[:top]
        return [(self.labels[i], float(p[i])) for i in order]

    def predict(self, question: str, topic: str | None = None, **kwargs) -> str:
        return self.rank(question, topic, top=1, **kwargs)[0][0]

    # ---- persistence ------------------------------------------------------------------------------------
    def save(self, folder: str | Path) -> Path:
        """Write ``ranker.npz`` and ``ranker.json`` into ``folder`` (each atomically); returns the folder."""
        return write_model(folder, "ranker", {"weights": self.weights, "bias": self.bias, "idf": self.idf}, {
            "fingerprint": self.fingerprint, "config": self.config.model_dump(),
            "config_fingerprint": self.config.fingerprint(), "labels": self.labels, "metrics": self.metrics,
            "topic_prior": self.topic_prior, "vocabulary": self.vocabulary})

    @classmethod
    def load(cls, folder: str | Path) -> IntentRanker:
        meta, arrays = read_model(folder, "ranker")
        ranker = cls(IntentConfig(**meta["config"]), meta["labels"], meta["vocabulary"], arrays["idf"],
                     arrays["weights"], arrays["bias"], meta.get("metrics"), meta.get("topic_prior"))
        if ranker.fingerprint != meta["fingerprint"]:
            raise ValueError(f"{folder}: fingerprint mismatch (files from different runs?)")
        return ranker


# ---- the latest run ---------------------------------------------------------------------------------------
def latest_intent_dir(settings: Settings) -> Path | None:
    """Folder of the intent run that trained last (``None`` when there is none)."""
    return latest_run(settings.checkpoint_dir / KIND / f"{DATASET}-latest.json", "ranker.json")


def load_latest_intent(settings: Settings) -> IntentRanker | None:
    """The ranker of the latest ``train-intent`` run, or ``None`` when none has run."""
    folder = latest_intent_dir(settings)
    return IntentRanker.load(folder) if folder is not None else None

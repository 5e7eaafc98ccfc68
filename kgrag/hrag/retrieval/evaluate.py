"""Evaluating a trained retriever: on a prepared split or on any MetaQA-format question file."""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kgrag.config import Settings
from kgrag.fileio import atomic_write, png_data_url
from kgrag.graph.csr import CSRGraph
from kgrag.hrag.retrieval import pipeline
from kgrag.hrag.retrieval.chains import ChainPrior, ChainWalker, chain_candidates
from kgrag.hrag.retrieval.config import MATERIALISATION, RetrieverConfig
from kgrag.hrag.retrieval.g_agent import GAgentSplit
from kgrag.hrag.retrieval.metrics import DEFAULT_KS, plot_recall, recall_report, report_table
from kgrag.hrag.retrieval.questions import read_question_file
from kgrag.hrag.retrieval.retriever import TripleScorer, score_samples
from kgrag.hrag.retrieval.samples import RetrievalSamples
from kgrag.hrag.retrieval.stage_inputs import load_graph
from kgrag.hrag.retrieval.text import TextEmbeddings
from kgrag.hrag.retrieval.train import load_scorer
from kgrag.rank.sentence_embedder import Embedder

__all__ = ["TrainedRetriever", "Evaluation", "load_trained", "evaluate_samples", "write_report",
           "evaluate_question_file"]


@dataclass
class TrainedRetriever:
    model: TripleScorer
    config: RetrieverConfig
    checkpoint: Path
    graph: CSRGraph
    text: TextEmbeddings
    prior: ChainPrior | None = None  # the relation-chain prior (None: the scorer alone ranks)
    walker: ChainWalker | None = None

    def focus(self, texts: Sequence[str], vectors: np.ndarray | None = None) -> list[np.ndarray] | None:
        """Per question the relations its PPR walk follows (None: the even walk); ``vectors``: the questions'
        sentence vectors when already at hand."""
        return pipeline.texts_focus(self.prior, self.text, texts, self.config, vectors)

    def chain_candidates(self, samples: RetrievalSamples, vectors: np.ndarray | None = None
                         ) -> list[tuple[np.ndarray, np.ndarray]] | None:
        """Per question the chain prior's triples and chain probabilities (None without a prior); ``vectors``:
        the questions' sentence vectors when already at hand."""
        cfg = self.config
        if self.prior is None or cfg.chain_weight <= 0:
            return None
        self.walker = self.walker or ChainWalker(self.graph)
        topics = [samples.question(i).topics.tolist() for i in range(len(samples))]
        vectors = self.text.questions(samples.texts) if vectors is None else vectors
        return chain_candidates(self.walker, self.prior, samples.texts, vectors, topics, cfg.anchor_top_k,
                                cfg.chain_max, cfg.chain_min_share)

    def g_agent_key(self, questions_file: Path, split: str) -> str:
        """What a split's g_agent depends on: the checkpoint file, the config (g_agent settings included), the
        prepared questions, the chain prior's weights and the split."""
        digest = hashlib.sha256()
        stat, questions = self.checkpoint.stat(), Path(questions_file).stat()
        digest.update(json.dumps([str(self.checkpoint), stat.st_mtime_ns, stat.st_size, self.config.model_dump(),
                                  str(questions_file), questions.st_mtime_ns, questions.st_size, split,
                                  pipeline.SAMPLES_VERSION, pipeline.CHAIN_PRIOR_VERSION]).encode())
        if self.prior is not None:
            for array in (self.prior.chains, self.prior.weight, self.prior.bias):
                digest.update(np.ascontiguousarray(array).tobytes())
        return digest.hexdigest()[:16]

    def g_agent(self, samples: RetrievalSamples, evaluation: Evaluation, oracle: bool, meta: dict,
                vectors: np.ndarray | None = None) -> GAgentSplit:
        """g_agent of ``samples`` (spec §4.4) from their scores, with the chain prior when there is one."""
        return pipeline.build_g_agent(self.graph, samples, evaluation.ptr, evaluation.scores,
                                      self.config.anchor_top_k, oracle, meta, self.chain_candidates(samples, vectors),
                                      self.config.chain_weight)


@dataclass
class Evaluation:
    report: dict[str, dict]
    ptr: np.ndarray
    scores: np.ndarray
    score_seconds: float

    @property
    def triples_per_second(self) -> float:
        return float(self.scores.size / self.score_seconds) if self.score_seconds else 0.0


def load_trained(settings: Settings, dataset: str, checkpoint: Path | None = None) -> TrainedRetriever:
    """The retriever of ``checkpoint`` (default: the latest trained for ``dataset``) with its graph, text vectors
    and relation-chain prior (learned from the train split, cached); its config is the saved one but for the
    g_agent settings (``MATERIALISATION``: size, chain prior), which follow the current defaults."""
    path = pipeline.checkpoint_input(settings, dataset, checkpoint)
    model, state = load_scorer(path)
    graph = load_graph(settings, dataset)
    text = TextEmbeddings.for_graph(graph, pipeline.hrag_dir(settings, dataset), Embedder.from_settings(settings))
    # a field a later version dropped (e.g. the global PPR's ppr_tol) is not read back
    saved = {k: v for k, v in state["config"].items() if k not in MATERIALISATION and k in RetrieverConfig.model_fields}
    config = RetrieverConfig(**saved)
    prior = None
    if pipeline.needs_prior(config):
        prior = _run_prior(path, lambda: pipeline.split_prior(settings, dataset, graph, text, config))
    return TrainedRetriever(model, config, path, graph, text, prior)


def _run_prior(checkpoint: Path, learn) -> ChainPrior:
    """The chain prior kept beside the retriever's checkpoint (``chain_prior.npz`` in its run folder), learned by
    ``learn`` the first time: the prior is part of the trained chain, so a run loaded for another dataset in the
    same relation vocabulary (a larger graph around the same data) brings its own."""
    path = Path(checkpoint).parent / "chain_prior.npz"
    if path.is_file():
        return ChainPrior.load(path)
    prior = learn()
    tmp = path.with_name(f"chain_prior.tmp{os.getpid()}.npz")
    prior.save(tmp)
    os.replace(tmp, path)
    return prior


def evaluate_samples(trained: TrainedRetriever, samples: RetrievalSamples, ks=DEFAULT_KS) -> Evaluation:
    start = time.perf_counter()
    ptr, scores = score_samples(trained.model, trained.graph, trained.text, samples)
    seconds = time.perf_counter() - start
    return Evaluation(recall_report(trained.graph, samples, ptr, scores, ks), ptr, scores, seconds)


def write_report(folder: Path, name: str, evaluation: Evaluation, title: str) -> dict[str, Path]:
    """``<name>.json`` (report + throughput), ``<name>.md`` (table) and ``<name>.png`` (recall vs K) in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = {"json": folder / f"{name}.json", "md": folder / f"{name}.md", "png": folder / f"{name}.png"}
    report = json.dumps({"report": evaluation.report, "score_seconds": evaluation.score_seconds,
                         "triples_scored": int(evaluation.scores.size),
                         "triples_per_second": evaluation.triples_per_second}, indent=1)
    atomic_write(paths["json"], lambda tmp: tmp.write_text(report))
    atomic_write(paths["md"], lambda tmp: tmp.write_text(f"# {title}\n\n{report_table(evaluation.report)}\n"))
    plot_recall(evaluation.report, paths["png"], title)
    return paths


def png_markdown(path: Path) -> str:
    """A markdown image with the PNG inlined (Prefect artifacts take markdown, not files)."""
    return f"![{Path(path).stem}]({png_data_url(path)})"


def evaluate_question_file(settings: Settings, dataset: str, path: Path, hop: int | None = None,
                           checkpoint: Path | None = None) -> tuple[Evaluation, dict]:
    """Evaluate the trained retriever on a MetaQA-format file; returns the evaluation and what was read."""
    trained = load_trained(settings, dataset, checkpoint)
    read = read_question_file(Path(path), trained.graph, hop)
    folder = pipeline.hrag_dir(settings, dataset) / "files"
    samples = pipeline.question_samples(trained.graph, read.questions, trained.config, folder, Path(path).stem,
                                        focus=trained.focus([q.text for q in read.questions]))
    info = {"file": str(path), "questions": len(read.questions), "malformed_lines": len(read.malformed_lines),
            "unresolved_topic": len(read.unresolved_topic), "unresolved_answers": read.unresolved_answers,
            "checkpoint": str(trained.checkpoint)}
    return evaluate_samples(trained, samples), info

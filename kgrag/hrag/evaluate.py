"""Evaluating a trained retriever: on a prepared split or on any MetaQA-format question file."""

from __future__ import annotations

import base64
import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kgrag.config import Settings
from kgrag.graph.csr import CSRGraph
from kgrag.hrag import pipeline
from kgrag.hrag.config import RetrieverConfig
from kgrag.hrag.metrics import DEFAULT_KS, plot_recall, recall_report, report_table
from kgrag.hrag.questions import read_question_file
from kgrag.hrag.retriever import TripleScorer, score_samples
from kgrag.hrag.samples import RetrievalSamples
from kgrag.hrag.text import TextEmbeddings
from kgrag.hrag.train import load_scorer
from kgrag.rank.embedder import Embedder

__all__ = ["TrainedRetriever", "Evaluation", "load_trained", "evaluate_samples", "write_report",
           "evaluate_question_file"]


@dataclass
class TrainedRetriever:
    model: TripleScorer
    config: RetrieverConfig
    checkpoint: Path
    graph: CSRGraph
    text: TextEmbeddings


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
    """The retriever of ``checkpoint`` (default: the latest trained for ``dataset``) with its graph and text vectors;
    its config is the saved one but for ``anchor_top_k``, g_agent's size, which follows the current default."""
    path = Path(checkpoint) if checkpoint else pipeline.latest_checkpoint(settings, dataset)
    model, state = load_scorer(path)
    graph = pipeline.load_graph(settings, dataset)
    text = TextEmbeddings.for_graph(graph, pipeline.hrag_dir(settings, dataset), Embedder.from_settings(settings))
    saved = {k: v for k, v in state["config"].items() if k != "anchor_top_k"}
    return TrainedRetriever(model, RetrieverConfig(**saved), path, graph, text)


def evaluate_samples(trained: TrainedRetriever, samples: RetrievalSamples, ks=DEFAULT_KS) -> Evaluation:
    start = time.perf_counter()
    ptr, scores = score_samples(trained.model, trained.graph, trained.text, samples)
    seconds = time.perf_counter() - start
    return Evaluation(recall_report(trained.graph, samples, ptr, scores, ks), ptr, scores, seconds)


def write_report(folder: Path, name: str, evaluation: Evaluation, title: str) -> dict[str, Path]:
    """``<name>.json`` (report + throughput), ``<name>.md`` (table) and ``<name>.png`` (recall vs K) in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = {"json": folder / f"{name}.json", "md": folder / f"{name}.md", "png": folder / f"{name}.png"}
    paths["json"].write_text(json.dumps({"report": evaluation.report, "score_seconds": evaluation.score_seconds,
                                         "triples_scored": int(evaluation.scores.size),
                                         "triples_per_second": evaluation.triples_per_second}, indent=1))
    paths["md"].write_text(f"# {title}\n\n{report_table(evaluation.report)}\n")
    plot_recall(evaluation.report, paths["png"], title)
    return paths


def png_markdown(path: Path) -> str:
    """A markdown image with the PNG inlined (Prefect artifacts take markdown, not files)."""
    data = base64.b64encode(Path(path).read_bytes()).decode()
    return f"![{Path(path).stem}](data:image/png;base64,{data})"


def evaluate_question_file(settings: Settings, dataset: str, path: Path, hop: int | None = None,
                           checkpoint: Path | None = None) -> tuple[Evaluation, dict]:
    """Evaluate the trained retriever on a MetaQA-format file; returns the evaluation and what was read."""
    trained = load_trained(settings, dataset, checkpoint)
    read = read_question_file(Path(path), trained.graph, hop)
    folder = pipeline.hrag_dir(settings, dataset) / "files"
    samples = pipeline.question_samples(trained.graph, read.questions, trained.config, folder, Path(path).stem)
    info = {"file": str(path), "questions": len(read.questions), "malformed_lines": len(read.malformed_lines),
            "unresolved_topic": len(read.unresolved_topic), "unresolved_answers": read.unresolved_answers,
            "checkpoint": str(trained.checkpoint)}
    return evaluate_samples(trained, samples), info

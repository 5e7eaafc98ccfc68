"""Answering with a trained policy on a g_agent split, and the report helpers (tables, examples).

The whole chain on a question file (PPR → retriever → g_agent → policy) is :mod:`kgrag.hrag.online.file_eval`, through
the online reasoner (:mod:`kgrag.hrag.online.reasoner`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kgrag.config import Settings
from kgrag.fileio import atomic_write
from kgrag.graph.csr import CSRGraph
from kgrag.hrag.gflownet import pipeline
from kgrag.hrag.gflownet.answers import FoundPath, answer_metrics, answer_questions, summarise
from kgrag.hrag.gflownet.config import GFlowNetConfig
from kgrag.hrag.gflownet.data import QuestionGraph
from kgrag.hrag.gflownet.llm_answer import PathEvidence, verbalise_path
from kgrag.hrag.gflownet.policy import PathPolicy
from kgrag.hrag.gflownet.train import AgentData, load_policy
from kgrag.hrag.retrieval import pipeline as retrieval
from kgrag.hrag.retrieval.g_agent import GAgentSplit
from kgrag.hrag.retrieval.text import TextEmbeddings

__all__ = ["TrainedPolicy", "Answers", "load_trained_policy", "answer_data", "evaluate_split",
           "metrics_table", "flat_figures", "write_answers_report", "path_evidence", "example_lines"]


@dataclass
class TrainedPolicy:
    policy: PathPolicy
    config: GFlowNetConfig
    threshold: float
    checkpoint: Path


@dataclass
class Answers:
    ranked: list[list[tuple[int, float]]]
    found: list[list[FoundPath]]
    metrics: dict[str, np.ndarray]  # per question
    report: dict[str, dict]  # per hop + all
    data: AgentData


def load_trained_policy(settings: Settings, dataset: str, checkpoint: Path | None = None) -> TrainedPolicy:
    path = retrieval.checkpoint_input(settings, dataset, checkpoint, kind="gflownet")
    policy, state = load_policy(path)
    return TrainedPolicy(policy, GFlowNetConfig(**state["config"]), float(state.get("threshold", 1.0)), path)


def answer_data(trained: TrainedPolicy, data: AgentData, entity_vectors: np.ndarray, misses: int = 0,
                miss_hops: list[int] | None = None) -> Answers:
    """Answer every question of ``data``; ``misses`` unanswerable questions (no topic) count as zeros."""
    cfg = trained.config
    ranked, found = answer_questions(trained.policy, data.questions, data.tokens, entity_vectors, cfg.beam_width,
                                     cfg.max_steps, cfg.exclude_topics,
                                     lookahead=cfg.beam_lookahead, complete=cfg.chain_completion,
                                     reasoner=cfg.reasoner)
    metrics = answer_metrics(ranked, data.gold, trained.threshold)
    hops = data.hops + list(miss_hops or [0] * misses)
    if misses:
        metrics = {k: np.concatenate([v, np.zeros(misses)]) for k, v in metrics.items()}
    return Answers(ranked, found, metrics, summarise(metrics, hops), data)


def evaluate_split(settings: Settings, dataset: str, split: str, trained: TrainedPolicy,
                   text: TextEmbeddings, g_agent: Path | None = None) -> Answers:
    """Answers on ``<split>_g_agent.pt`` (or the given file) with the split's gold answer sets."""
    agent = GAgentSplit.load(retrieval.g_agent_input(settings, dataset, split, g_agent))
    data = pipeline.agent_data(agent, text, pipeline.split_gold(settings, dataset, split))
    return answer_data(trained, data, text.entities)


def metrics_table(report: dict[str, dict]) -> str:
    """Markdown: rows per hop + all; Hits@1 / Hit / F1 in percent with ``n``."""
    lines = ["| rows | n | Hits@1 | Hit | F1 |", "|---|---|---|---|---|"]
    for name, row in report.items():
        lines.append(f"| {name} | {row['n']} | {100 * row['hits@1']:.2f} | {100 * row['hit']:.2f} | "
                     f"{100 * row['f1']:.2f} |")
    return "\n".join(lines)


def flat_figures(report: dict[str, dict]) -> dict[str, float | int]:
    """The one-line JSON of ``kgrag eval --json``: n, hits@1, hit, f1 over all questions."""
    row = report["all"]
    return {"n": row["n"], "hits@1": row["hits@1"], "hit": row["hit"], "f1": row["f1"]}


def write_answers_report(folder: Path, name: str, report: dict[str, dict], extra: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"answers_{name}.json"
    text = json.dumps({"report": report, **extra}, indent=1, default=str)
    atomic_write(path, lambda tmp: tmp.write_text(text))
    return path


def path_evidence(question: QuestionGraph, path: FoundPath, graph: CSRGraph) -> PathEvidence:
    """A found path as named triples (as stored in the graph, in walk order) for display or an LLM prompt."""
    def name(local: int) -> str:
        entity = int(question.node_ids[local])
        return graph.entity_names[entity] or graph.entity_ids[entity]

    triples = tuple((name(int(question.head[c // 2])), graph.relations[int(question.relation[c // 2])],
                     name(int(question.tail[c // 2]))) for c in path.candidates)
    return PathEvidence(triples, name(path.terminal), path.probability)


def example_lines(answers: Answers, graph: CSRGraph, index: int, top: int = 3) -> list[str]:
    """One question's answers: the question, the ranked answers (✓ = gold) and its most probable paths."""
    q, ranked, gold = answers.data.questions[index], answers.ranked[index], answers.data.gold[index]

    def name(entity: int) -> str:
        return graph.entity_names[entity] or graph.entity_ids[entity]

    lines = [f"Question ({q.hop}-hop): {q.text}",
             "Answers: " + (", ".join(f"{name(e)} {s:.3f}{' ✓' if e in gold else ' ✗'}" for e, s in ranked[:top])
                            or "none")]
    for path in answers.found[index][:top]:
        lines.append(f"  path p={path.probability:.3f}: {verbalise_path(path_evidence(q, path, graph))}")
    return lines

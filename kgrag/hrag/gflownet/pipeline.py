"""System 2's steps over a prepared dataset (flows/ wires them): g_agent data, checkpoints, the latest run.

Checkpoints: ``work/checkpoints/gflownet/<dataset>-<config fingerprint>/{best,last}.pt``; ``<dataset>-latest.json``
beside them names the run that trained last (what ``kgrag eval`` loads, through
:func:`~kgrag.hrag.retrieval.pipeline.checkpoint_input`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from kgrag.config import Settings
from kgrag.errors import KgragError
from kgrag.graph.csr import CSRGraph
from kgrag.hrag.gflownet.config import GFlowNetConfig
from kgrag.hrag.gflownet.data import agent_questions
from kgrag.hrag.gflownet.plan_data import PlanData
from kgrag.hrag.gflownet.train import AgentData
from kgrag.hrag.retrieval import pipeline as retrieval
from kgrag.hrag.retrieval.chain_labels import cached_chains
from kgrag.hrag.retrieval.chains import shared_chains
from kgrag.hrag.retrieval.g_agent import GAgentSplit
from kgrag.hrag.retrieval.questions import HragQuestion, masked_text, prepared_questions
from kgrag.hrag.retrieval.text import TextEmbeddings

__all__ = ["agent_data", "plan_data", "split_gold", "run_dir", "record_latest"]


def split_gold(settings: Settings, dataset: str, split: str) -> dict[str, set[int]]:
    """qid → the gold answer entities of a prepared split (the whole set, also answers g_agent lacks)."""
    return {q.qid: set(q.answers) for q in prepared_questions(settings.dataset_dir(dataset), [split])}


def agent_data(g_agent: GAgentSplit, text: TextEmbeddings, gold: dict[str, set[int]] | Sequence[HragQuestion],
               max_edges: int | None = None, walks: int = 0, seed: int = 0) -> AgentData:
    """A g_agent split as policy data; ``gold`` maps qid → answers (or the questions g_agent was built from)."""
    if not isinstance(gold, dict):
        gold = {q.qid: set(q.answers) for q in gold}
    missing = [q for q in g_agent.qids if str(q) not in gold]
    if missing:
        raise KgragError(f"{len(missing)} g_agent questions without gold answers (first: {missing[0]})")
    questions = agent_questions(g_agent, max_edges, walks, seed)
    return AgentData(questions, text.question_tokens(g_agent.questions), [gold[str(q)] for q in g_agent.qids])


def plan_data(settings: Settings, dataset: str, split: str, graph: CSRGraph, text: TextEmbeddings,
              max_steps: int, cap: int = 0) -> PlanData:
    """The relation planner's training set: the questions of a prepared split (not only those g_agent was built
    for; ``cap`` of them, a fixed sample, when given) with their relation chains read off the whole KG (cached
    beside the dataset's H-RAG files), each question's cut to those its wording shares."""
    questions = retrieval.chain_questions(settings, dataset, split, cap)
    chains = cached_chains(retrieval.hrag_dir(settings, dataset), graph, [q.topics for q in questions],
                           [q.answers for q in questions], [q.hop for q in questions], max_steps,
                           settings.hrag_part_questions)
    # a tied chain the question's wording does not share is a coincidence of the graph (:func:`shared_chains`): in
    # a big graph questions have 15 times the ties, each a row of every warm-up step it is drawn in
    texts = [q.text for q in questions]
    return PlanData.build(texts, shared_chains(chains, [masked_text(t) for t in texts]), text)


def run_dir(settings: Settings, dataset: str, cfg: GFlowNetConfig) -> Path:
    return settings.checkpoint_dir / "gflownet" / f"{dataset}-{cfg.fingerprint()}"


def record_latest(settings: Settings, dataset: str, folder: Path) -> None:
    retrieval.record_latest(settings, dataset, folder, kind="gflownet")

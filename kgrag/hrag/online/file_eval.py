"""The whole H-RAG chain on a MetaQA-format question file, through the online reasoner (what ``kgrag eval
--questions`` runs): topics from the [brackets] (or, with ``no_brackets``, from the entity linker over the text
with the brackets removed) → PPR → retriever + chain prior → g_agent → policy → answers → Hits@1 / Hit / F1.

    result = evaluate_file(reasoner, Path("../shared/data/metaqa/3-hop/dev.txt"), no_brackets=True)
    result.report["all"]["hits@1"], result.info["linked_wrong"]

Questions whose topic entity the graph lacks (or the linker cannot find) stay in the denominator as misses.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kgrag.data.metaqa import TOPIC_SPAN
from kgrag.hrag.gflownet.answers import answer_metrics, summarise
from kgrag.hrag.online.reasoner import HRAGReasoner
from kgrag.hrag.retrieval.questions import HragQuestion, read_question_file

__all__ = ["FileResult", "strip_brackets", "evaluate_file"]


@dataclass
class FileResult:
    report: dict[str, dict]  # per hop + all: n, hits@1, hit, f1
    metrics: dict[str, np.ndarray]  # per question
    ranked: list[list[tuple[int, float]]]
    questions: list[HragQuestion]
    info: dict


def strip_brackets(text: str) -> str:
    """The question as a user types it: ``[Tom Hanks]`` → ``Tom Hanks``."""
    return TOPIC_SPAN.sub(lambda m: m.group(1), text)


def evaluate_file(reasoner: HRAGReasoner, path: Path, hop: int | None = None, no_brackets: bool = False,
                  batch: int = 512, progress: Callable[[int, int], None] | None = None) -> FileResult:
    """Answer every question of the file with ``reasoner`` (in batches of ``batch``) and score the answers."""
    read = read_question_file(Path(path), reasoner.graph, hop)
    questions, linked_wrong, unlinked = [], 0, 0
    for q in read.questions:
        if not no_brackets:
            questions.append(q)
            continue
        topics, text = reasoner.link(strip_brackets(q.text))
        linked_wrong += bool(topics) and not set(topics) & set(q.topics)
        unlinked += not topics
        questions.append(HragQuestion(q.qid, text, topics, q.answers, q.hop, q.split))
    answerable = [i for i, q in enumerate(questions) if q.topics]
    ranked: list[list[tuple[int, float]]] = [[] for _ in questions]
    ms: dict[str, float] = {}
    for start in range(0, len(answerable), batch):
        rows = answerable[start : start + batch]
        ranking = reasoner.rank([questions[i] for i in rows])
        for i, r in zip(rows, ranking.ranked, strict=True):
            ranked[i] = r
        for k, v in ranking.ms.items():
            ms[k] = ms.get(k, 0.0) + v
        if progress is not None:
            progress(min(start + batch, len(answerable)), len(answerable))
    misses = len(read.unresolved_topic)
    gold = [set(q.answers) for q in questions] + [set()] * misses
    metrics = answer_metrics(ranked + [[]] * misses, gold, reasoner.policy.threshold)
    hops = [q.hop for q in questions] + [read.questions[0].hop] * misses
    info = {"file": str(path), "questions": len(questions) + misses, "malformed_lines": len(read.malformed_lines),
            "unresolved_topic": misses, "unresolved_answers": read.unresolved_answers,
            "no_brackets": no_brackets, "linked_wrong": int(linked_wrong), "unlinked": int(unlinked),
            "retriever": str(reasoner.retriever.checkpoint), "policy": str(reasoner.policy.checkpoint),
            "threshold": reasoner.policy.threshold, "stage_seconds": {k: round(v / 1000, 3) for k, v in ms.items()}}
    return FileResult(summarise(metrics, hops), metrics, ranked, questions, info)

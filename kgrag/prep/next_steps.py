"""What to try after ``kgrag prepare``: a few questions of the prepared data, each as the exact ``kgrag ask`` command.

    try_next("demo", Path("work/demo"))  # ['kgrag ask "who directed Carnival Lights?" --kg demo', …]

The questions come from the held-out split (validation, else test, else any), one per hop first, with a resolved
topic and an answer within 3 hops; their ``[topic]`` brackets are removed (the agent links the topic from the text).
A graph imported without questions gets questions written from its own triples (:func:`graph_questions`: "what is
the <relation> of <the best-connected named entity>?").
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import numpy as np

from kgrag.data.metaqa import TOPIC_SPAN
from kgrag.graph.classes import type_relations
from kgrag.graph.csr import CSRGraph
from kgrag.prep.steps import read_prepared_questions

__all__ = ["ask_command", "graph_questions", "sample_questions", "try_next"]

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")

#: splits a sample is taken from, in order of preference (held-out first)
SPLITS = ("validation", "test", "train")


def sample_questions(out_dir: Path, count: int = 3) -> list[str]:
    """Up to ``count`` question texts of ``out_dir/questions.jsonl`` (see the module docstring)."""
    if not (out_dir / "questions.jsonl").is_file():
        return []
    by_split: dict[str, list[dict]] = {}
    for record in read_prepared_questions(out_dir):
        if record.get("topic_ids") and record.get("answer_ids") and (record.get("answer_hops") or 0) > 0:
            by_split.setdefault(record.get("split", ""), []).append(record)
    pool = next((by_split[s] for s in (*SPLITS, *sorted(by_split)) if by_split.get(s)), [])
    picks: list[dict] = []
    for hop in sorted({q.get("hop") or 0 for q in pool}):  # the first question of each hop count …
        picks.append(next(q for q in pool if (q.get("hop") or 0) == hop))
    picks += [q for q in pool if q not in picks]  # … then the next ones in file order
    return [TOPIC_SPAN.sub(lambda m: m.group(1), q["text"]) for q in picks[:count]]


def ask_command(question: str, option: str, target: str) -> str:
    """``kgrag ask "<question>" --kg <target>`` quoted for a POSIX shell (double quotes when that is safe)."""
    quoted = f'"{question}"' if not any(c in question for c in '"$`\\!') else shlex.quote(question)
    return f"kgrag ask {quoted} --{option} {target}"


def graph_questions(graph: CSRGraph, count: int = 2) -> list[str]:
    """Up to ``count`` questions written from the graph: the best-connected named entities, each asked for one of
    its relations that ends at a named node ("what is the born in of Marie Curie?" reads "bornIn" as words)."""
    kinds = set(type_relations(graph))
    degree = np.diff(np.asarray(graph.out_ptr))
    out: list[str] = []
    top = min(50 * count, degree.size)
    # the best-connected rows without sorting the whole graph (ties kept in row order, as a stable sort would)
    best = np.flatnonzero(degree >= np.partition(degree, degree.size - top)[degree.size - top]) if top else degree[:0]
    for row in best[np.argsort(-degree[best], kind="stable")][:top].tolist():
        name = graph.entity_names[row]
        if not name or not degree[row]:
            continue
        edges = graph.out_edges(int(row))
        for edge in edges.tolist():
            rel, tail = int(graph.rel[edge]), int(graph.tail[edge])
            if rel in kinds or not graph.entity_names[tail]:
                continue
            label = graph.relation_labels[rel].rsplit(".", 1)[-1]
            words = " ".join(_CAMEL.sub(" ", label).replace("_", " ").lower().split())
            out.append(f"what is the {words} of {name}?")
            break
        if len(out) >= count:
            break
    return out


def try_next(dataset: str, out_dir: Path, count: int = 3) -> list[str]:
    """The ``kgrag ask`` commands to try on the prepared ``dataset``: its sample questions, else questions written
    from its graph (empty when it has neither)."""
    questions = sample_questions(out_dir, count)
    if not questions and (out_dir / "graph.npz").is_file():
        questions = graph_questions(CSRGraph.load(out_dir / "graph.npz"), min(count, 2))
    return [ask_command(q, "kg", dataset) for q in questions]

"""Real questions over databases as networks (Spider's, converted: ``shared/data/spider_train``, ``spider``) — the
material the plan scorer learns from and is measured on, split **by database**.

    dbs = read_corpus(data_dir / "spider_train")          # [Database(db_id, view, questions), …]
    train, val, held = split_by_database(dbs, seed=13)     # disjoint databases

Contract: a database folder holds ``<db_id>.yaml`` (the network, loaded by the project's declarative loader
without a store) and ``questions.jsonl`` (``{"question", "answers", "kind", …}``). :func:`split_by_database` is
seeded and deterministic: the same seed gives the same three sets of databases (shares :data:`SPLIT`).
:func:`answers_match` compares answer sets as Spider's gold asks — numbers numerically ("18.0" is "18"), text
case- and space-insensitively.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kgrag.network.loaders.declarative import load_declarative
from kgrag.reading.tables import TableView, number_text

__all__ = ["Database", "answer_key", "answers_f1", "answers_match", "read_corpus", "split_by_database"]

#: train / validation / held-out shares of the databases
SPLIT = (0.7, 0.15, 0.15)


@dataclass
class Database:
    db_id: str
    view: TableView
    questions: list[dict[str, Any]] = field(default_factory=list)


def read_database(folder: Path) -> Database:
    schema = next(iter(sorted(folder.glob("*.yaml"))))
    network, instances, links = load_declarative(schema)
    view = TableView.build(network, instances, links)
    qfile = folder / "questions.jsonl"
    questions = [json.loads(line) for line in qfile.read_text(encoding="utf-8").splitlines() if line.strip()] \
        if qfile.is_file() else []
    return Database(network.kn_id, view, questions)


def read_corpus(root: Path, only: Iterable[str] | None = None, with_questions: bool = True) -> list[Database]:
    """Every database folder under ``root`` (``only``: these db ids), sorted by id."""
    wanted = set(only) if only is not None else None
    out = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        if wanted is not None and folder.name not in wanted:
            continue
        if with_questions and not (folder / "questions.jsonl").is_file():
            continue
        db = read_database(folder)
        if not with_questions or db.questions:
            out.append(db)
    return out


def split_by_database(dbs: Sequence[Database], seed: int = 13) -> tuple[list[Database], list[Database], list[Database]]:
    """(train, validation, held-out) databases, shuffled by ``seed``."""
    order = sorted(dbs, key=lambda d: d.db_id)
    random.Random(seed).shuffle(order)
    n = len(order)
    a = round(n * SPLIT[0])
    b = a + round(n * SPLIT[1])
    return order[:a], order[a:b], order[b:]


def answer_key(value: Any) -> str:
    """An answer as a set member: space-collapsed, lower-cased, a number written one way (6 decimals at most)."""
    return number_text(" ".join(str(value).split()).lower(), digits=6)


def answers_f1(predicted: Iterable[Any], gold: Iterable[Any]) -> float:
    p, g = {answer_key(v) for v in predicted}, {answer_key(v) for v in gold}
    common = len(p & g)
    return 0.0 if not common else 2 * common / (len(p) + len(g))


def answers_match(predicted: Iterable[Any], gold: Iterable[Any]) -> bool:
    p, g = {answer_key(v) for v in predicted}, {answer_key(v) for v in gold}
    return bool(g) and p == g

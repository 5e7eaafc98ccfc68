"""Gold answers of the CE-Prompt questions, computed from the RAW disease records (not from the network store,
so that they check its load and its queries).

A parsed :class:`~kgrag.agent.training.cypher.CypherTarget` runs on :func:`kgrag.data.medical.read_diseases` through
the mapping of ``shared/data/README.md``, which lives once in code, in :mod:`kgrag.network.loaders.medical`
(``RELATION_VALUES``, ``disease_properties``): has_symptom→symptoms, acompany_with→has_complication,
need_check→inspect_info, do_eat/no_eat→good_food/avoid_food, recommand_recipes→recommand_recipes,
belongs_to→belongs_to_department, common_drug→common_drug; properties cure_way→treat_way,
cure_lasttime→treat_cycle, cured_prob→cure_prob, easy_get→susceptible_people, get_way→transmission_way,
get_prob→disease_ratio, cost_money→treat_cost, cause→cause_info, prevent→prevent_info, desc→gaishu desc,
nursing→nursing_info, medical_insurance). Answers are lists of strings: a scalar text property is a
one-element list, lists keep the data's order with repeats dropped. Like :mod:`kgrag.network.loaders.medical`,
two records with one disease name (``胎膜早破``) give the first record's properties and the union of both
records' links, and an undirected ``acompany_with`` is read as the stored Disease → complication direction.

``load_ce_prompt(path)`` parses, executes and returns ``(examples, skip_counts)``; a question is skipped (with
its reason counted) when its Cypher is outside the subset, its topic is no name in the data (``topic not in
data``) or its answer is empty (``empty answer``). ``write_gold_jsonl`` / ``read_gold_jsonl`` keep
``{"qid", "question", "answers", "topic", "topic_type", "label"}`` lines.

Run: ``python -m kgrag.agent.training.gold [out.jsonl]`` prints the counts (and writes the gold file).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from kgrag.agent.training.cypher import PROPERTY_TYPES, RELATION_SCHEMA, CypherTarget, parse_cypher
from kgrag.data.medical import Disease, read_cypher_questions, read_diseases
from kgrag.fileio import atomic_write
from kgrag.network.loaders.medical import RELATION_VALUES, disease_properties

__all__ = ["PROPERTY_VALUES", "RELATION_VALUES", "DiseaseIndex", "GoldExample", "available_labels",
           "disease_index", "gold_answers", "load_ce_prompt", "read_gold_jsonl", "write_gold_jsonl"]

#: Disease property -> its raw value (a string or a list of strings): the network loader's mapping
PROPERTY_VALUES: dict[str, Callable[[Disease], object]] = {
    prop: (lambda d, p=prop: disease_properties(d)[p]) for prop in PROPERTY_TYPES}


def _unique(values: Iterable[str]) -> list[str]:
    return [v for v in dict.fromkeys(values) if v]


class DiseaseIndex:
    """The disease records by name (first record first) and, per relation, target name → source diseases."""

    def __init__(self, diseases: Sequence[Disease]) -> None:
        self.records: dict[str, list[Disease]] = {}
        for d in diseases:
            self.records.setdefault(d.name, []).append(d)
        self.inbound: dict[str, dict[str, list[str]]] = {rel: {} for rel in RELATION_VALUES}
        for d in diseases:
            for rel, get in RELATION_VALUES.items():
                for target in dict.fromkeys(get(d)):
                    sources = self.inbound[rel].setdefault(target, [])
                    if not sources or sources[-1] != d.name:
                        sources.append(d.name)

    def __len__(self) -> int:
        return len(self.records)

    def names(self) -> list[str]:
        return list(self.records)

    def property(self, name: str, prop: str) -> list[str] | None:
        """``prop`` of the disease ``name`` (its first record) as a list; ``None`` when there is no such
        disease."""
        records = self.records.get(name)
        if not records:
            return None
        value = PROPERTY_VALUES[prop](records[0])
        return _unique([value] if isinstance(value, str) else value)

    def outbound(self, name: str, rel: str) -> list[str] | None:
        records = self.records.get(name)
        if not records:
            return None
        return _unique(t for d in records for t in RELATION_VALUES[rel](d))

    def sources(self, name: str, rel: str) -> list[str] | None:
        """The diseases with a ``rel`` link to ``name``; ``None`` when nothing links to it."""
        found = self.inbound[rel].get(name)
        return _unique(found) if found else None


@lru_cache(maxsize=2)
def _cached_index(folder: str, stamp: int) -> DiseaseIndex:  # noqa: ARG001 - stamp keys the cache
    return DiseaseIndex(read_diseases(folder).records)


def disease_index(folder: str | Path) -> DiseaseIndex:
    """The :class:`DiseaseIndex` of ``<folder>/medical_*.json`` (cached per folder and modification time)."""
    folder = Path(folder)
    files = folder.glob("medical_*.json") if folder.is_dir() else []
    stamp = max((p.stat().st_mtime_ns for p in files), default=0)
    return _cached_index(str(folder.resolve()), stamp)


def gold_answers(target: CypherTarget, index: DiseaseIndex) -> list[str] | None:
    """The answer list of ``target`` on the raw data; ``None`` when its topic is no name in the data."""
    if target.kind == "property":
        return index.property(target.topic, target.element)
    if target.direction == "out":
        return index.outbound(target.topic, target.element)
    return index.sources(target.topic, target.element)


def available_labels(index: DiseaseIndex, topic: str, topic_type: str = "Disease") -> set[str]:
    """The labels (``prop:…``, ``rel:…``, ``rel_in:…``) with a non-empty answer for ``topic`` — what an agent
    holding the same data could answer for it."""
    labels: set[str] = set()
    if topic_type == "Disease" and topic in index.records:
        labels |= {f"prop:{p}" for p in PROPERTY_VALUES if index.property(topic, p)}
        labels |= {f"rel:{r}" for r in RELATION_VALUES if index.outbound(topic, r)}
    for rel, (_, target_type) in RELATION_SCHEMA.items():
        if target_type == topic_type and rel in RELATION_VALUES and index.sources(topic, rel):
            labels.add(f"rel_in:{rel}")
    return labels


@dataclass(frozen=True)
class GoldExample:
    qid: str
    question: str
    target: CypherTarget
    answers: tuple[str, ...]
    cypher: str = ""

    @property
    def label(self) -> str:
        return self.target.label

    @property
    def topic(self) -> str:
        return self.target.topic

    def to_json(self) -> dict:
        return {"qid": self.qid, "question": self.question, "answers": list(self.answers),
                "topic": self.topic, "topic_type": self.target.topic_type, "label": self.label}


def load_ce_prompt(path: str | Path,
                   diseases_dir: str | Path | None = None) -> tuple[list[GoldExample], Counter]:
    """Parse and execute every question of ``questions_cypher_train.json``: ``(examples, skip counts by
    reason)``.

    ``diseases_dir`` defaults to ``<path's folder>/diseases``.
    """
    path = Path(path)
    index = disease_index(Path(diseases_dir) if diseases_dir is not None else path.parent / "diseases")
    read = read_cypher_questions(path)
    skips: Counter = Counter()
    skips["invalid record"] += len(read.issues)
    examples: list[GoldExample] = []
    for q in read.records:
        parsed = parse_cypher(q.cypher)
        if parsed.target is None:
            skips[parsed.reason] += 1
            continue
        answers = gold_answers(parsed.target, index)
        if answers is None:
            skips["topic not in data"] += 1
        elif not answers:
            skips["empty answer"] += 1
        else:
            examples.append(GoldExample(q.qid, q.question, parsed.target, tuple(answers), q.cypher))
    if not skips["invalid record"]:
        del skips["invalid record"]
    return examples, skips


def write_gold_jsonl(path: str | Path, examples: Iterable[GoldExample]) -> int:
    """Write ``{"qid", "question", "answers", "topic", "topic_type", "label"}`` lines atomically; returns
    the count."""
    lines = [json.dumps(ex.to_json(), ensure_ascii=False) + "\n" for ex in examples]
    atomic_write(Path(path), lambda tmp: tmp.write_text("".join(lines), encoding="utf-8"))
    return len(lines)


def read_gold_jsonl(path: str | Path) -> list[dict]:
    """The ``{"question", "answers", …}`` records of a JSONL file (blank lines ignored; ``answers`` a list of
    strings, ``qid`` defaulting to the 1-based line number)."""
    records = []
    with Path(path).open(encoding="utf-8") as fh:
        for i, line in enumerate(fh, 1):
            if not line.strip():
                continue
            row = json.loads(line)
            if not isinstance(row, dict) or not isinstance(row.get("question"), str):
                raise ValueError(f"{path}:{i}: expected an object with a 'question' string")
            answers = row.get("answers", [])
            if isinstance(answers, str):
                answers = [answers]
            records.append({**row, "qid": str(row.get("qid", i)), "answers": [str(a) for a in answers]})
    return records


if __name__ == "__main__":
    import sys

    from kgrag.config import get_settings

    examples, skips = load_ce_prompt(get_settings().data_dir / "medical" / "questions_cypher_train.json")
    labels = Counter(e.label for e in examples)
    print(json.dumps({"examples": len(examples), "labels": dict(labels.most_common()),
                      "skipped": dict(skips.most_common())}, ensure_ascii=False, indent=1))
    if len(sys.argv) > 1:
        print(write_gold_jsonl(sys.argv[1], examples), "written to", sys.argv[1])

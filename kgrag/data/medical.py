"""Chinese medical knowledge graph (xywy.com crawl, Tonystark-001/MedicalKGQA) and its Cypher-paired questions.

``read_diseases`` parses ``diseases/medical_*.json`` (each a JSON object ``index -> disease``) into typed
:class:`Disease` records; ``medical_kg`` turns them into a triple graph whose entity keys are ``"<Type>:<name>"``
(``Disease:百日咳``, ``Symptom:干咳`` …). Two records may share a disease name (``胎膜早破`` appears twice with
different details); in the graph they are one node carrying the union of their edges.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from kgrag.data.download import missing_data_error
from kgrag.data.gc_pause import gc_paused
from kgrag.data.records import KGDataset, LineIssue, ReadResult, Triple

__all__ = [
    "MEDICAL_NS",
    "MEDICAL_RELATIONS",
    "NODE_TYPES",
    "CypherQuestion",
    "Disease",
    "FoodInfo",
    "GaishuInfo",
    "SymptomData",
    "medical_kg",
    "node_type",
    "read_cypher_questions",
    "read_diseases",
    "relation_entry_counts",
]

MEDICAL_NS = "http://example.org/kgrag/medical/ns/"
NODE_TYPES = ("Disease", "Symptom", "Check", "Drug", "Department", "Food", "Recipe")




def _clean_str(value: Any) -> Any:
    if value is None:
        return ""
    return value.strip() if isinstance(value, str) else value


def _clean_list(value: Any) -> Any:
    """None → [], a bare string → [string]; items stripped, empty items dropped (duplicates kept)."""
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if isinstance(value, list):
        return [
            x.strip() if isinstance(x, str) else x
            for x in value
            if not (isinstance(x, str) and not x.strip())
        ]
    return value


class _Model(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)


class GaishuInfo(_Model):
    """概述 (overview) block. 50 records in the crawl lack the treatment fields; they default to empty."""

    name: str = Field(min_length=1)
    desc: str = ""
    medical_insurance: str = ""
    disease_ratio: str = ""
    susceptible_people: str = ""
    transmission_way: str = ""
    has_complication: list[str] = Field(default_factory=list)
    belongs_to_department: list[str] = Field(default_factory=list)
    treat_way: list[str] = Field(default_factory=list)
    treat_cycle: str = ""
    cure_prob: str = ""
    common_drug: list[str] = Field(default_factory=list)
    treat_cost: str = ""

    clean_strs = field_validator(
        "name",
        "desc",
        "medical_insurance",
        "disease_ratio",
        "susceptible_people",
        "transmission_way",
        "treat_cycle",
        "cure_prob",
        "treat_cost",
        mode="before",
    )(_clean_str)
    clean_lists = field_validator(
        "has_complication", "belongs_to_department", "treat_way", "common_drug", mode="before"
    )(_clean_list)


class SymptomData(_Model):
    symptoms: list[str] = Field(default_factory=list)
    symptom_detail: list[str] = Field(default_factory=list)

    clean_lists = field_validator("symptoms", "symptom_detail", mode="before")(_clean_list)


class FoodInfo(_Model):
    good_diet_text: str = ""
    avoid_diet_text: str = ""
    good_food: list[str] = Field(default_factory=list)
    avoid_food: list[str] = Field(default_factory=list)
    recommand_recipes: list[str] = Field(default_factory=list)

    clean_strs = field_validator("good_diet_text", "avoid_diet_text", mode="before")(_clean_str)
    clean_lists = field_validator("good_food", "avoid_food", "recommand_recipes", mode="before")(_clean_list)


class Disease(_Model):
    """One disease record; ``source`` is ``<file name>#<index>``."""

    gaishu_info: GaishuInfo
    cause_info: str = ""
    prevent_info: str = ""
    symptom_data: SymptomData = Field(default_factory=SymptomData)
    inspect_info: list[str] = Field(default_factory=list)
    nursing_info: str = ""
    food_info: FoodInfo = Field(default_factory=FoodInfo)
    source: str = ""

    clean_strs = field_validator("cause_info", "prevent_info", "nursing_info", mode="before")(_clean_str)
    clean_lists = field_validator("inspect_info", mode="before")(_clean_list)

    @field_validator("symptom_data", "food_info", mode="before")
    @classmethod
    def _none_block(cls, value: Any) -> Any:
        return {} if value is None else value

    @property
    def name(self) -> str:
        return self.gaishu_info.name


class CypherQuestion(BaseModel):
    """A patient question paired with a Cypher query over the classic medical schema."""

    model_config = ConfigDict(frozen=True, populate_by_name=True)

    qid: str
    question: str = Field(alias="input", min_length=1)
    cypher: str = Field(min_length=1)


# relation -> (target node type, the disease's list of target names)
MEDICAL_RELATIONS: dict[str, tuple[str, Callable[[Disease], list[str]]]] = {
    "has_symptom": ("Symptom", lambda d: d.symptom_data.symptoms),
    "inspection": ("Check", lambda d: d.inspect_info),
    "good_food": ("Food", lambda d: d.food_info.good_food),
    "avoid_food": ("Food", lambda d: d.food_info.avoid_food),
    "recipes": ("Recipe", lambda d: d.food_info.recommand_recipes),
    "has_complication": ("Disease", lambda d: d.gaishu_info.has_complication),
    "department": ("Department", lambda d: d.gaishu_info.belongs_to_department),
    "common_drug": ("Drug", lambda d: d.gaishu_info.common_drug),
}


def node_type(key: str) -> str:
    """``"Symptom:干咳"`` → ``"Symptom"``."""
    return key.split(":", 1)[0]


def _file_order(path: Path) -> tuple[int, str]:
    m = re.search(r"(\d+)", path.stem)
    return (int(m.group(1)) if m else -1, path.name)


def read_diseases(path: str | Path) -> ReadResult[Disease]:
    """Read every ``medical_*.json`` in folder ``path`` (numeric file order), or one such file.

    A record that is not an object, has no ``gaishu_info.name`` or has wrongly typed fields is reported as a
    :class:`LineIssue` (``line`` = 1-based position of the record in its file). Missing fields default to empty.
    """
    path = Path(path)
    if path.is_dir():
        files = sorted(path.glob("medical_*.json"), key=_file_order)
        if not files:
            raise missing_data_error(path / "medical_*.json", "medical", "medical disease files")
    elif path.is_file():
        files = [path]
    else:
        raise missing_data_error(path, "medical", "medical disease folder")
    records: list[Disease] = []
    issues: list[LineIssue] = []
    with gc_paused():
        for file in files:
            with file.open(encoding="utf-8") as fh:
                data = json.load(fh)
            if isinstance(data, dict):
                items = list(data.items())
            elif isinstance(data, list):
                items = [(str(i), v) for i, v in enumerate(data)]
            else:
                issues.append(
                    LineIssue(str(file), 0, f"expected a JSON object or list, got {type(data).__name__}")
                )
                continue
            for pos, (key, item) in enumerate(items, 1):
                if not isinstance(item, dict):
                    issues.append(LineIssue(str(file), pos, f"record {key!r} is not an object"))
                    continue
                try:
                    records.append(Disease.model_validate({**item, "source": f"{file.name}#{key}"}))
                except ValidationError as exc:
                    first = exc.errors()[0]
                    loc = ".".join(str(p) for p in first["loc"])
                    issues.append(LineIssue(str(file), pos, f"record {key!r}: {loc}: {first['msg']}"))
    return ReadResult(records=records, issues=issues)


def relation_entry_counts(diseases: Iterable[Disease]) -> dict[str, int]:
    """Raw list entries per relation (before de-duplication): the counts the source README reports."""
    counts: Counter[str] = Counter()
    for d in diseases:
        for rel, (_, get) in MEDICAL_RELATIONS.items():
            counts[rel] += len(get(d))
    return {rel: counts[rel] for rel in MEDICAL_RELATIONS}


def medical_kg(diseases: Iterable[Disease]) -> KGDataset:
    """Triple graph of the diseases: keys ``"<Type>:<name>"``, names the plain names, unique triples.

    Edges run from the disease to its symptoms (``has_symptom``), checks (``inspection``), foods
    (``good_food``/``avoid_food``), recipes (``recipes``), complications (``has_complication``, Disease →
    Disease), departments (``department``) and drugs (``common_drug``). A repeated (disease, relation, target) —
    from a list that names a target twice or from two records with the same disease name — is one triple.
    """
    names: dict[str, str] = {}
    seen: dict[tuple[str, str, str], None] = {}
    with gc_paused():
        for d in diseases:
            head = f"Disease:{d.name}"
            names[head] = d.name
            for rel, (target_type, get) in MEDICAL_RELATIONS.items():
                for target in get(d):
                    tail = f"{target_type}:{target}"
                    names.setdefault(tail, target)
                    seen.setdefault((head, rel, tail), None)
        triples = [Triple(h, r, t) for h, r, t in seen]
    return KGDataset(
        name="medical",
        triples=triples,
        names=names,
        iri_base=MEDICAL_NS,
        id_style="slug",
        name_lang="zh",
    )


def read_cypher_questions(path: str | Path) -> ReadResult[CypherQuestion]:
    """Read ``questions_cypher_train.json`` (a list of ``{input, cypher}``); ``qid`` = ``medical-cypher-<n>``."""
    path = Path(path)
    if not path.is_file():
        raise missing_data_error(path, "medical", "medical Cypher questions")
    with path.open(encoding="utf-8") as fh:
        data = json.load(fh)
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON list of {{input, cypher}} records")
    records: list[CypherQuestion] = []
    issues: list[LineIssue] = []
    for i, item in enumerate(data, 1):
        if not isinstance(item, dict):
            issues.append(LineIssue(str(path), i, "record is not an object"))
            continue
        try:
            records.append(
                CypherQuestion(
                    qid=f"medical-cypher-{i}",
                    question=str(item.get("input") or "").strip(),
                    cypher=str(item.get("cypher") or "").strip(),
                )
            )
        except ValidationError as exc:
            first = exc.errors()[0]
            issues.append(LineIssue(str(path), i, f"{'.'.join(map(str, first['loc']))}: {first['msg']}"))
    return ReadResult(records=records, issues=issues)

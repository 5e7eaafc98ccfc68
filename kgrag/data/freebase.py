"""Freebase-flavoured samples: WebQSP and CWQ question files, the CWQ relation whitelist, metadata filter.

No Freebase graph ships with kgrag; these readers give typed questions (with SPARQL, topic MIDs, answers) and the
relation lists that spec kg-tools.md (the specification of the KG tools for LLM agents) names. Malformed
records are reported as :class:`LineIssue` whose ``line`` is the 1-based record number in the file's
top-level JSON list.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from kgrag.data.download import missing_data_error
from kgrag.data.records import KGQuestion, LineIssue, ReadResult

__all__ = [
    "FREEBASE_NS",
    "CWQQuestion",
    "FreebaseAnswer",
    "WebQSPConstraint",
    "WebQSPParse",
    "WebQSPQuestion",
    "cwq_to_kgquestions",
    "is_meaningless_relation",
    "read_cwq",
    "read_meaningless_relations",
    "read_relation_whitelist",
    "read_webqsp",
    "strip_ns",
    "webqsp_to_kgquestions",
]

FREEBASE_NS = "http://rdf.freebase.com/ns/"

M = TypeVar("M", bound=BaseModel)


def strip_ns(relation: str) -> str:
    """``http://rdf.freebase.com/ns/film.actor.film`` (or ``ns:film.actor.film``) → ``film.actor.film``."""
    relation = relation.strip().strip("<>")
    if relation.startswith(FREEBASE_NS):
        return relation[len(FREEBASE_NS) :]
    if relation.startswith("ns:"):
        return relation[3:]
    return relation


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, populate_by_name=True, extra="ignore")


class FreebaseAnswer(_Model):
    """A gold answer: an entity (``value`` is its MID) or a literal value (``name`` is then None)."""

    kind: Literal["Entity", "Value"] = Field(alias="AnswerType")
    value: str = Field(alias="AnswerArgument")
    name: str | None = Field(default=None, alias="EntityName")

    @property
    def mid(self) -> str | None:
        return self.value if self.kind == "Entity" else None

    @property
    def label(self) -> str:
        """The display form: the entity name, else the value itself."""
        return self.name if self.name else self.value


class WebQSPConstraint(_Model):
    operator: str = Field(alias="Operator")
    argument_type: str = Field(alias="ArgumentType")
    argument: str = Field(alias="Argument")
    entity_name: str | None = Field(default=None, alias="EntityName")
    source_node_index: int = Field(default=0, alias="SourceNodeIndex")
    node_predicate: str = Field(alias="NodePredicate")
    value_type: str | None = Field(default=None, alias="ValueType")


class WebQSPParse(_Model):
    """One annotated semantic parse of a WebQSP question (official field names as aliases)."""

    parse_id: str = Field(alias="ParseId")
    sparql: str = Field(default="", alias="Sparql")
    topic_entity_mid: str | None = Field(default=None, alias="TopicEntityMid")
    topic_entity_name: str | None = Field(default=None, alias="TopicEntityName")
    topic_entity_mention: str | None = Field(default=None, alias="PotentialTopicEntityMention")
    inferential_chain: list[str] = Field(default_factory=list, alias="InferentialChain")
    constraints: list[WebQSPConstraint] = Field(default_factory=list, alias="Constraints")
    time: dict[str, Any] | None = Field(default=None, alias="Time")
    order: dict[str, Any] | None = Field(default=None, alias="Order")
    answers: list[FreebaseAnswer] = Field(default_factory=list, alias="Answers")

    @field_validator("inferential_chain", "constraints", "answers", mode="before")
    @classmethod
    def _none_to_list(cls, value: Any) -> Any:
        return [] if value is None else value


class WebQSPQuestion(_Model):
    """A WebQSP question with its parses; the flat properties read the first parse (answers: all parses)."""

    qid: str = Field(alias="QuestionId")
    question: str = Field(alias="RawQuestion")
    processed_question: str = Field(default="", alias="ProcessedQuestion")
    parses: list[WebQSPParse] = Field(alias="Parses", min_length=1)
    topic_entities: dict[str, str] = Field(default_factory=dict, alias="topic_entity")

    @property
    def topic_entity_mid(self) -> str | None:
        return self.parses[0].topic_entity_mid

    @property
    def topic_entity_name(self) -> str | None:
        return self.parses[0].topic_entity_name

    @property
    def inferential_chain(self) -> list[str]:
        return self.parses[0].inferential_chain

    @property
    def sparql(self) -> str:
        return self.parses[0].sparql

    @property
    def constraints(self) -> list[WebQSPConstraint]:
        return self.parses[0].constraints

    @property
    def answers(self) -> list[FreebaseAnswer]:
        """Gold answers of all parses, first occurrence kept (WebQSP scores against any parse)."""
        seen: dict[str, FreebaseAnswer] = {}
        for parse in self.parses:
            for answer in parse.answers:
                seen.setdefault(answer.value, answer)
        return list(seen.values())


class CWQQuestion(_Model):
    """A ComplexWebQuestions question (ToG's ``cwq.json`` layout)."""

    qid: str = Field(alias="ID")
    question: str
    machine_question: str = ""
    sparql: str = ""
    webqsp_id: str | None = Field(default=None, alias="webqsp_ID")
    webqsp_question: str | None = None
    topic_entities: dict[str, str] = Field(default_factory=dict, alias="topic_entity")
    answer: str
    compositionality_type: str | None = None
    created: str | None = None


def _load_json(path: Path, what: str) -> Any:
    if not path.is_file():
        raise missing_data_error(path, "freebase", what)
    with path.open(encoding="utf-8") as fh:
        return json.load(fh)


def _validate_all(path: Path, items: list[Any], model: type[M], what: str) -> ReadResult[M]:
    records: list[M] = []
    issues: list[LineIssue] = []
    for i, item in enumerate(items, 1):
        try:
            records.append(model.model_validate(item))
        except ValidationError as exc:
            first = exc.errors()[0]
            loc = ".".join(str(p) for p in first["loc"])
            issues.append(LineIssue(str(path), i, f"invalid {what} record: {loc}: {first['msg']}"))
    return ReadResult(records=records, issues=issues)


def read_webqsp(path: str | Path) -> ReadResult[WebQSPQuestion]:
    """Read a WebQSP file in the official format (``{"Questions": [...]}``) or a plain list of questions."""
    path = Path(path)
    data = _load_json(path, "WebQSP questions")
    if isinstance(data, dict) and isinstance(data.get("Questions"), list):
        data = data["Questions"]
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a list of WebQSP questions, got {type(data).__name__}")
    return _validate_all(path, data, WebQSPQuestion, "WebQSP")


def read_cwq(path: str | Path) -> ReadResult[CWQQuestion]:
    """Read a ComplexWebQuestions file (list of ``{ID, question, sparql, topic_entity, answer, …}``)."""
    path = Path(path)
    data = _load_json(path, "CWQ questions")
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a list of CWQ questions, got {type(data).__name__}")
    return _validate_all(path, data, CWQQuestion, "CWQ")


def read_relation_whitelist(path: str | Path) -> list[str]:
    """The CWQ relation whitelist as dotted names (``http://rdf.freebase.com/ns/`` stripped), file order."""
    path = Path(path)
    data = _load_json(path, "relation whitelist")
    if not isinstance(data, list) or not all(isinstance(x, str) for x in data):
        raise ValueError(f"{path}: expected a JSON list of relation URIs")
    return list(dict.fromkeys(strip_ns(x) for x in data if x.strip()))


def read_meaningless_relations(path: str | Path) -> list[str]:
    """Metadata relation patterns, one per line; ``#`` comments and blank lines are skipped."""
    path = Path(path)
    if not path.is_file():
        raise missing_data_error(path, "freebase", "meaningless-relations list")
    out: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            out.append(strip_ns(line))
    return out


def is_meaningless_relation(relation: str, patterns: list[str] | tuple[str, ...]) -> bool:
    """True when ``relation`` equals a pattern or starts with ``pattern + '.'`` (full IRIs accepted)."""
    rel = strip_ns(relation)
    return any(rel == p or rel.startswith(p + ".") for p in patterns)


def webqsp_to_kgquestions(questions: list[WebQSPQuestion], split: str = "test") -> list[KGQuestion]:
    """WebQSP → :class:`KGQuestion`: topic MID(s) as ``topic_ids``; answers of all parses.

    ``answer_names`` has one label per answer (entity name, or the value for literal answers), ``answer_ids``
    the MIDs of the entity answers only. ``hop`` is the length of the first parse's inferential chain.
    """
    out: list[KGQuestion] = []
    for q in questions:
        topics = dict(q.topic_entities)
        for parse in q.parses:
            if parse.topic_entity_mid and parse.topic_entity_mid not in topics:
                topics[parse.topic_entity_mid] = parse.topic_entity_name or parse.topic_entity_mid
        answers = q.answers
        out.append(
            KGQuestion(
                qid=q.qid,
                text=q.question,
                topic_names=list(topics.values()),
                answer_names=[a.label for a in answers],
                dataset="webqsp",
                split=split,
                hop=len(q.inferential_chain) or None,
                qtype=None,
                topic_ids=list(topics),
                answer_ids=[a.mid for a in answers if a.mid],
            )
        )
    return out


def cwq_to_kgquestions(questions: list[CWQQuestion], split: str = "test") -> list[KGQuestion]:
    """CWQ → :class:`KGQuestion`: topic MIDs as ``topic_ids``; the file gives the answer's name only, so
    ``answer_ids`` is empty (resolved later). ``qtype`` is the compositionality type."""
    return [
        KGQuestion(
            qid=q.qid,
            text=q.question,
            topic_names=list(q.topic_entities.values()),
            answer_names=[q.answer],
            dataset="cwq",
            split=split,
            hop=None,
            qtype=q.compositionality_type,
            topic_ids=list(q.topic_entities),
            answer_ids=[],
        )
        for q in questions
    ]

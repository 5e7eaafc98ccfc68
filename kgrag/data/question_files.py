"""Read a user's question files in any format kgrag knows, as :class:`KGQuestion` records to resolve later.

    read_question_files(["q.jsonl", "webqsp.json"], dataset="mykg")   # ReadResult[KGQuestion]

Formats (told apart by content, not by name):

- canonical JSONL, one object per line: ``{"question", "topic_entities": [name or IRI …], "answers": [name or IRI
  …], "split"?: "train"|"validation"|"test", "id"?, "hop"?}``; unknown fields are ignored. Each topic and answer
  is a *reference* (``topic_names`` / ``answer_names``), resolved against the graph by IRI, id, exact name, then
  normalised name when the dataset is prepared.
- MetaQA lines ``question with [topic]<TAB>a1|a2`` (the hop is the ``k`` of a ``k-hop`` folder in the path, as
  MetaQA lays its files out; else it comes from the graph).
- the official WebQSP JSON (``{"Questions": [...]}``) and ComplexWebQuestions JSON (a list with ``sparql`` /
  ``compositionality_type``), read by :mod:`kgrag.data.freebase`: topic MIDs with their names, answer MIDs with
  their names (``topic_ids`` aligned with ``topic_names``).

A line that cannot be used is a :class:`LineIssue` (file and line); a missing file or a file with no question at
all is a one-line error. qids are ``<file stem>-<line>`` unless the record has an ``id``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

from kgrag.data.freebase import cwq_to_kgquestions, read_cwq, read_webqsp, webqsp_to_kgquestions
from kgrag.data.metaqa import parse_question_line
from kgrag.data.records import KGQuestion, LineIssue, ReadResult
from kgrag.errors import KgragError

__all__ = ["SPLITS", "question_format", "read_question_file", "read_question_files", "require_question_file"]

SPLITS = ("train", "validation", "test")
_HOP_DIR = re.compile(r"^(\d+)-hop$")


def question_format(path: Path) -> str:
    """``jsonl`` | ``webqsp`` | ``cwq`` | ``json`` (a JSON list of canonical objects) | ``metaqa``."""
    with open(path, encoding="utf-8") as fh:
        head = fh.read(4096)
    start = head.lstrip()
    if start.startswith("["):
        if re.search(r'"(QuestionId|Parses|RawQuestion)"\s*:', head):
            return "webqsp"  # the official file's "Questions" list on its own
        return "cwq" if re.search(r'"(compositionality_type|sparql|machine_question)"\s*:', head) else "json"
    if start.startswith("{"):
        if re.match(r'\{\s*"(Version|FreebaseVersion|Questions)"', start):
            return "webqsp"
        return "jsonl"
    return "metaqa"


def _strings(value: object) -> list[str] | None:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, (str, int, float)) for v in value):
        return [str(v).strip() for v in value if str(v).strip()]
    return None


def _canonical(obj: object, spath: str, line: int, stem: str, dataset: str) -> KGQuestion | str:
    if not isinstance(obj, dict):
        return "not a JSON object"
    text = obj.get("question")
    if not isinstance(text, str) or not text.strip():
        return 'no "question" text'
    topics = _strings(obj.get("topic_entities", []))
    answers = _strings(obj.get("answers", []))
    if topics is None or answers is None:
        return '"topic_entities" and "answers" must be lists of names or IRIs'
    if not topics:
        return "no topic entity"
    split = obj.get("split")
    if split is not None and split not in SPLITS:
        return f'"split" must be one of {", ".join(SPLITS)}, got {split!r}'
    hop = obj.get("hop")
    qid = obj.get("id") or obj.get("qid")
    return KGQuestion(qid=str(qid) if qid else f"{stem}-{line}", text=text.strip(), topic_names=topics,
                      answer_names=answers, dataset=dataset, split=split or "",
                      hop=hop if isinstance(hop, int) and hop >= 0 else None)


def _read_json_objects(path: Path, fmt: str, dataset: str) -> ReadResult[KGQuestion]:
    spath, stem = str(path), path.stem
    records: list[KGQuestion] = []
    issues: list[LineIssue] = []
    if fmt == "json":
        try:
            items = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise KgragError(f"{path}:{exc.lineno}: not valid JSON: {exc.msg}") from None
        numbered = list(enumerate(items, 1))
    else:
        numbered = []
        with open(path, encoding="utf-8") as fh:
            for line, raw in enumerate(fh, 1):
                if not raw.strip():
                    continue
                try:
                    numbered.append((line, json.loads(raw)))
                except json.JSONDecodeError as exc:
                    issues.append(LineIssue(spath, line, f"not valid JSON: {exc.msg}"))
    for line, obj in numbered:
        parsed = _canonical(obj, spath, line, stem, dataset)
        if isinstance(parsed, str):
            issues.append(LineIssue(spath, line, parsed))
        else:
            records.append(parsed)
    return ReadResult(records=records, issues=issues)


def _read_metaqa_lines(path: Path, dataset: str) -> ReadResult[KGQuestion]:
    spath = str(path)
    hop_dir = _HOP_DIR.match(path.parent.name)
    hop = int(hop_dir.group(1)) if hop_dir else None
    prefix = f"{path.parent.name}/{path.stem}" if hop_dir else path.stem
    records: list[KGQuestion] = []
    issues: list[LineIssue] = []
    with open(path, encoding="utf-8") as fh:
        for line, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            parsed = parse_question_line(raw.rstrip("\r\n"))
            if isinstance(parsed, str):
                issues.append(LineIssue(spath, line, parsed))
                continue
            text, topics, answers = parsed
            records.append(KGQuestion(qid=f"{prefix}-{line}", text=text, topic_names=topics, answer_names=answers,
                                      dataset=dataset, split="", hop=hop))
    return ReadResult(records=records, issues=issues)


def require_question_file(path: str | Path | None) -> None:
    """A missing question file (when one is given) as one clear error, before any checkpoint is looked for: the
    commands and the flows a deployment runs (evaluate, retriever-eval) say the same."""
    if path is not None and not Path(path).is_file():
        raise KgragError(f"question file not found: {path} (MetaQA lines, JSONL, WebQSP or CWQ JSON)")


def read_question_file(path: str | Path, dataset: str) -> ReadResult[KGQuestion]:
    """One file, its format told from its content (see the module docstring)."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise KgragError(f"question file not found: {path}")
    fmt = question_format(path)
    try:
        if fmt == "webqsp":
            read = read_webqsp(path)
            records = webqsp_to_kgquestions(read.records, split="")
        elif fmt == "cwq":
            read = read_cwq(path)
            records = cwq_to_kgquestions(read.records, split="")
    except ValueError as exc:  # not the official layout after all
        raise KgragError(str(exc)) from None
    if fmt == "metaqa":
        return _read_metaqa_lines(path, dataset)
    if fmt in ("json", "jsonl"):
        return _read_json_objects(path, fmt, dataset)
    for q in records:
        q.dataset = dataset
    return ReadResult(records=records, issues=read.issues)


def read_question_files(paths: Sequence[str | Path], dataset: str) -> ReadResult[KGQuestion]:
    """Every file; qids made unique across files (a repeat gets ``#2``, ``#3``)."""
    records: list[KGQuestion] = []
    issues: list[LineIssue] = []
    for path in paths:
        read = read_question_file(path, dataset)
        if not read.records:
            first = f" (first problem: {read.issues[0]})" if read.issues else ""
            raise KgragError(f"no question could be read from {path}{first}")
        records += read.records
        issues += read.issues
    seen: dict[str, int] = {}
    for q in records:
        n = seen[q.qid] = seen.get(q.qid, 0) + 1
        if n > 1:
            q.qid = f"{q.qid}#{n}"
    return ReadResult(records=records, issues=issues)

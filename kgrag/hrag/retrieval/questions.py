"""Questions for the H-RAG pipeline: prepared splits from the work dir, or any MetaQA-format question file.

A :class:`HragQuestion` carries what retrieval needs: graph-row ids of the topic and answer entities, the hop
count (when known) and the text. A MetaQA-format file is ``question<TAB>answer1|answer2|…`` per line, the topic
entity in ``[brackets]``; names are resolved against the graph's entity keys (for MetaQA, the names).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from kgrag.data.metaqa import TOPIC_SPAN, parse_question_line
from kgrag.data.question_files import question_format
from kgrag.data.question_files import read_question_file as read_questions_any
from kgrag.errors import KgragError
from kgrag.graph.csr import CSRGraph
from kgrag.graph.mapped import StringColumn
from kgrag.hrag.retrieval.stage_inputs import stage_input
from kgrag.prep.resolve import EntityResolver
from kgrag.prep.steps import read_prepared_questions

__all__ = ["HragQuestion", "FileQuestions", "prepared_questions", "read_question_file", "masked_text",
           "write_split_files"]

_HOP_IN_PATH = re.compile(r"(\d)-?hop", re.IGNORECASE)


@dataclass
class HragQuestion:
    qid: str
    text: str
    topics: list[int]
    answers: list[int]
    hop: int = 0  # 0 = unknown
    split: str = ""


@dataclass
class FileQuestions:
    """Questions read from a file, and what could not be used (reported, never silently dropped)."""

    questions: list[HragQuestion]
    unresolved_topic: list[str] = field(default_factory=list)  # qids whose topic entity is not in the graph
    malformed_lines: list[int] = field(default_factory=list)
    unresolved_answers: int = 0  # gold answer names not in the graph (left out of the answer set)


def masked_text(text: str) -> str:
    """The question with each ``[topic]`` span replaced by a placeholder: the retriever sees the question's
    template, the entity reaches it through the structure features (MetaQA phrasing varies by template only)."""
    return TOPIC_SPAN.sub("X", text).strip()


def prepared_questions(out_dir: Path, splits: list[str] | None = None, hop: int | None = None) -> list[HragQuestion]:
    """Questions of ``questions.jsonl`` (from ``kgrag prepare``) with a resolved topic entity."""
    stage_input(Path(out_dir) / "questions.jsonl", f"kgrag prepare --dataset {Path(out_dir).name}")
    out = []
    for rec in read_prepared_questions(out_dir):
        if splits is not None and rec["split"] not in splits:
            continue
        if hop is not None and rec.get("hop") != hop:
            continue
        if not rec.get("topic_index"):
            continue
        out.append(HragQuestion(rec["qid"], rec["text"], list(rec["topic_index"]), list(rec["answer_index"]),
                                int(rec.get("hop") or 0), rec["split"]))
    return out


def write_split_files(out_dir: Path, split: str, graph: CSRGraph, folder: Path,
                      rows_of: dict[int, list[HragQuestion]] | None = None) -> dict[int, Path]:
    """A prepared split as MetaQA-format files, one per hop (``<folder>/<split>_<h>hop.txt``: the question with its
    topic in ``[brackets]``, then the answers' names joined by ``|``), for tools that read question files
    (``kgrag eval --questions``, ``kgrag agent-eval --kg``); ``rows_of`` gives the questions per hop instead. A
    question whose text does not name its topic (nothing to bracket) is left out."""
    if rows_of is None:
        rows_of = {}
        for q in prepared_questions(out_dir, [split]):
            rows_of.setdefault(q.hop, []).append(q)
    folder.mkdir(parents=True, exist_ok=True)

    def name(row: int) -> str:
        return graph.entity_names[row] or graph.entity_keys[row]

    out = {}
    for hop in sorted(rows_of):
        lines = []
        for q in rows_of[hop]:
            text = q.text
            if not TOPIC_SPAN.search(text):
                topic = name(q.topics[0])
                if topic not in text:
                    continue
                text = text.replace(topic, f"[{topic}]", 1)
            lines.append(f"{text}\t{'|'.join(name(a) for a in q.answers)}\n")
        path = folder / f"{split}_{hop}hop.txt"
        path.write_text("".join(lines), encoding="utf-8")
        out[hop] = path
    return out


def _name_index(graph: CSRGraph, wanted: set[str]) -> dict[str, int]:
    """For each of the ``wanted`` names: its entity's row by key, else (Freebase-shaped graphs key by MID) the
    first row with that name; a mapped graph finds them in one vectorised pass, never decoding every name."""
    names = graph.entity_names
    if isinstance(names, StringColumn):
        index = {name: rows[0] for name, rows in names.find(wanted).items()}
    else:
        index = {}
        for row, name in enumerate(names):
            if name in wanted:
                index.setdefault(name, row)
    keys = graph.key_index
    index.update({name: keys[name] for name in wanted if name in keys})
    return index


def _read_other_format(path: Path, graph: CSRGraph, hop: int | None) -> FileQuestions:
    """Canonical JSONL, WebQSP or CWQ JSON (:mod:`kgrag.data.question_files`), references resolved by
    :class:`~kgrag.prep.resolve.EntityResolver`; the topic's stored name is put in [brackets] when the text has it."""
    read = read_questions_any(path, graph.name)
    resolution = EntityResolver(graph).resolve_all(read.records)
    result = FileQuestions([], malformed_lines=[i.line for i in read.issues],
                           unresolved_answers=resolution.unresolved_answers)
    for q, topics, answers in zip(read.records, resolution.topics, resolution.answers, strict=True):
        if not topics:
            result.unresolved_topic.append(q.qid)
            continue
        text, name = q.text, graph.entity_names[topics[0]]
        if not TOPIC_SPAN.search(text) and name:
            start = text.lower().find(name.lower())
            if start >= 0:
                text = f"{text[:start]}[{text[start:start + len(name)]}]{text[start + len(name):]}"
        result.questions.append(HragQuestion(q.qid, text, topics, answers, hop or q.hop or 0, "file"))
    return result


def read_question_file(path: Path, graph: CSRGraph, hop: int | None = None) -> FileQuestions:
    """Read a question file: MetaQA lines (``hop`` defaults to the ``N-hop`` folder/file name when it has one; topic
    and answer names resolve against entity keys first, then entity names), or any other format ``kgrag prepare
    --questions`` reads."""
    path = Path(path)
    if not path.is_file():
        raise KgragError(f"question file not found: {path}")
    if question_format(path) != "metaqa":
        result = _read_other_format(path, graph, hop)
        if not result.questions:
            raise KgragError(f"{path}: no usable question ({len(result.malformed_lines)} malformed, "
                             f"{len(result.unresolved_topic)} with no topic the graph knows)")
        return result
    if hop is None:
        found = _HOP_IN_PATH.search(str(path))
        hop = int(found.group(1)) if found else 0
    lines = [(lineno, parse_question_line(line))
             for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if line.strip()]
    index = _name_index(graph, {n for _, p in lines if not isinstance(p, str) for n in (*p[1], *p[2])})
    result = FileQuestions([])
    for lineno, parsed in lines:
        if isinstance(parsed, str):
            result.malformed_lines.append(lineno)
            continue
        text, topics, names = parsed
        qid = f"{path.stem}-{lineno}"
        topic_ids = [index[t] for t in topics if t in index]
        if not topic_ids:
            result.unresolved_topic.append(qid)
            continue
        answer_ids = [index[a] for a in names if a in index]
        result.unresolved_answers += len(names) - len(answer_ids)
        result.questions.append(HragQuestion(qid, text, topic_ids, answer_ids, hop, "file"))
    if not result.questions:
        raise KgragError(f"{path}: no usable question (expected 'question<TAB>a1|a2' lines with a [topic] the graph "
                         f"knows; {len(result.malformed_lines)} malformed, {len(result.unresolved_topic)} unresolved)")
    return result

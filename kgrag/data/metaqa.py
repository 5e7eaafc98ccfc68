"""MetaQA reader: the WikiMovies KB (``kb.txt``) and the k-hop question files, plus a seeded train/validation split.

Conventions (MetaQA's own): an entity's key *is* its name string, so ``names`` maps each key to itself and remakes
that share a title share a node. A few movie titles are also year values (``1941``, ``1984``, ``2012`` …); they are
the same node as the year and carry the ``gYear`` literal type like every other ``release_year`` value.
"""

from __future__ import annotations

import random
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

from kgrag.data.download import missing_data_error
from kgrag.data.gc_pause import gc_paused
from kgrag.data.records import KGDataset, KGQuestion, LineIssue, ReadResult, Triple
from kgrag.errors import KgragError

__all__ = [
    "METAQA_NS",
    "read_kb",
    "read_questions",
    "split_train_validation",
    "literal_type",
]

METAQA_NS = "http://example.org/kgrag/metaqa/ns/"

_YEAR = re.compile(r"^\d{4}$")
_INT = re.compile(r"^[+-]?\d+$")
_DECIMAL = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)$")
TOPIC_SPAN = re.compile(r"\[([^\[\]]+)\]")  # a [bracketed] topic entity in a question

# relation -> (value pattern, XSD datatype) for tails that are literal values
_LITERAL_RELATIONS: dict[str, tuple[re.Pattern[str], str]] = {
    "release_year": (_YEAR, "gYear"),
    "has_imdb_rating": (_DECIMAL, "decimal"),
    "has_imdb_votes": (_INT, "integer"),
}




def literal_type(relation: str, value: str) -> str | None:
    """XSD datatype of ``value`` as the tail of ``relation``, or None when it is not a literal value.

    ``release_year`` 4-digit years are ``gYear``; numeric ``has_imdb_rating`` values are ``decimal`` and numeric
    ``has_imdb_votes`` values ``integer``. (In the shipped kb.txt ratings and votes are words such as ``good`` or
    ``famous``, so only years get a literal type.)
    """
    rule = _LITERAL_RELATIONS.get(relation)
    if rule is None or not rule[0].match(value):
        return None
    return rule[1]


def read_kb(path: str | Path) -> KGDataset:
    """Read ``kb.txt`` (``head|relation|tail`` per line) into a :class:`KGDataset` named ``metaqa``.

    A line that does not split into exactly three non-empty fields on ``|`` is reported as a :class:`LineIssue`
    (no name in MetaQA contains ``|``, so a line with more fields cannot be split unambiguously and is not
    guessed at). Fields are stripped; blank lines are skipped. A repeated triple is kept once and each repeat is
    reported as an issue (the original MetaQA file has 1,159 such lines).
    """
    path = Path(path)
    if not path.is_file():
        raise missing_data_error(path, "metaqa", "MetaQA KB file")
    spath = str(path)
    lines = path.read_text(encoding="utf-8").splitlines()
    with gc_paused():
        first_seen: dict[tuple[str, str, str], int] = {}
        issues: list[LineIssue] = []
        for lineno, line in enumerate(lines, 1):
            parts = line.split("|")
            if len(parts) != 3:
                if line.strip():
                    issues.append(
                        LineIssue(spath, lineno, f"expected 3 '|'-separated fields, got {len(parts)}")
                    )
                continue
            h, r, t = parts[0].strip(), parts[1].strip(), parts[2].strip()
            if not (h and r and t):
                issues.append(LineIssue(spath, lineno, "empty head, relation or tail"))
                continue
            key = (h, r, t)
            prev = first_seen.setdefault(key, lineno)
            if prev != lineno:
                issues.append(LineIssue(spath, lineno, f"duplicate of line {prev}"))
        triples = [Triple(h, r, t) for (h, r, t) in first_seen]
        names: dict[str, str] = {}
        literal_types: dict[str, str] = {}
        for h, r, t in first_seen:
            names[h] = h
            names[t] = t
            if r in _LITERAL_RELATIONS and t not in literal_types:
                kind = literal_type(r, t)
                if kind is not None:
                    literal_types[t] = kind
    return KGDataset(
        name="metaqa",
        triples=triples,
        names=names,
        iri_base=METAQA_NS,
        id_style="slug",
        name_lang="en",
        literal_types=literal_types,
        issues=issues,
    )


def _read_lines(path: Path, what: str) -> list[str]:
    if not path.is_file():
        raise missing_data_error(path, "metaqa", what)
    return path.read_text(encoding="utf-8").splitlines()


def parse_question_line(line: str) -> tuple[str, list[str], list[str]] | str:
    """``question<TAB>a1|a2|…`` → (question text, topic names in brackets, answer names), or the reason the line
    cannot be used."""
    text, tab, answers = line.partition("\t")
    if not tab:
        return "no tab between question and answers"
    text = text.strip()
    topics = [m.strip() for m in TOPIC_SPAN.findall(text)]
    answer_names = [a.strip() for a in answers.split("|") if a.strip()]
    if not topics:
        return "no [bracketed] topic entity in the question"
    if not answer_names:
        return "no answers"
    return text, topics, answer_names


def read_questions(
    data_dir: str | Path,
    hops: Iterable[int] = (1, 2, 3),
    split_file: str = "dev",
) -> ReadResult[KGQuestion]:
    """Read ``{k}-hop/{split_file}.txt`` and ``{k}-hop/{split_file}_qtype.txt`` for each k in ``hops``.

    ``data_dir`` is the MetaQA folder (the one holding ``kb.txt``). Each line is ``question<TAB>a1|a2|…``; the
    topic entities are the ``[bracketed]`` spans (every shipped question has exactly one). ``text`` keeps the
    question as written, brackets included. Since MetaQA keys entities by name, ``topic_ids``/``answer_ids`` are
    the names. ``qid`` is ``metaqa-{k}hop-{split_file}-{line}`` (1-based line); ``split`` is ``split_file``.
    Lines without a tab, a bracketed topic or an answer are reported as issues. A qtype file whose line count
    differs from its question file raises :class:`KgragError`.
    """
    root = Path(data_dir)
    records: list[KGQuestion] = []
    issues: list[LineIssue] = []
    for k in hops:
        qpath = root / f"{k}-hop" / f"{split_file}.txt"
        tpath = root / f"{k}-hop" / f"{split_file}_qtype.txt"
        qlines = _read_lines(qpath, f"MetaQA {k}-hop questions")
        tlines = _read_lines(tpath, f"MetaQA {k}-hop question types")
        if len(qlines) != len(tlines):
            raise KgragError(
                f"{tpath} has {len(tlines)} lines but {qpath} has {len(qlines)}: the question-type file must have "
                "one line per question. Re-download both files from the same source."
            )
        spath = str(qpath)
        for lineno, (line, qtype) in enumerate(zip(qlines, tlines, strict=True), 1):
            parsed = parse_question_line(line)
            if isinstance(parsed, str):
                issues.append(LineIssue(spath, lineno, parsed))
                continue
            text, topics, answer_names = parsed
            records.append(
                KGQuestion(
                    qid=f"metaqa-{k}hop-{split_file}-{lineno}",
                    text=text,
                    topic_names=topics,
                    answer_names=answer_names,
                    dataset="metaqa",
                    split=split_file,
                    hop=k,
                    qtype=qtype.strip() or None,
                    topic_ids=list(topics),
                    answer_ids=list(answer_names),
                )
            )
    return ReadResult(records=records, issues=issues)


def _qid_order(q: KGQuestion) -> tuple[int, str]:
    """Shorter ids first, then lexicographic: numeric order for ids that share a prefix (``…-9`` < ``…-10``)."""
    return (len(q.qid), q.qid)


def split_train_validation(
    questions: Sequence[KGQuestion],
    validation_fraction: float = 0.1,
    seed: int = 0,
) -> dict[str, list[KGQuestion]]:
    """Split questions into ``train``/``validation``, stratified by hop, deterministic for a seed.

    Within each hop the questions are sorted by qid (shorter first, so the input order does not matter),
    shuffled with ``random.Random(f"{seed}:{hop}")`` and the first ``round(n * validation_fraction)`` become
    validation. Returns copies with ``split`` set, each list in (hop, qid) order. qids must be unique.
    """
    if not 0.0 <= validation_fraction < 1.0:
        raise ValueError(f"validation_fraction must be in [0, 1), got {validation_fraction}")
    by_hop: dict[int | None, list[KGQuestion]] = defaultdict(list)
    for q in questions:
        by_hop[q.hop].append(q)
    if len({q.qid for q in questions}) != len(questions):
        raise ValueError("question ids must be unique to split deterministically")
    out: dict[str, list[KGQuestion]] = {"train": [], "validation": []}
    for hop in sorted(by_hop, key=lambda h: -1 if h is None else h):
        group = sorted(by_hop[hop], key=_qid_order)
        order = list(range(len(group)))
        random.Random(f"{seed}:{hop}").shuffle(order)
        n_val = round(len(group) * validation_fraction)
        val_idx = set(order[:n_val])
        for i, q in enumerate(group):
            split = "validation" if i in val_idx else "train"
            out[split].append(
                KGQuestion(
                    qid=q.qid,
                    text=q.text,
                    topic_names=list(q.topic_names),
                    answer_names=list(q.answer_names),
                    dataset=q.dataset,
                    split=split,
                    hop=q.hop,
                    qtype=q.qtype,
                    topic_ids=list(q.topic_ids),
                    answer_ids=list(q.answer_ids),
                )
            )
    return out

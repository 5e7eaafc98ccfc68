"""A Freebase-shaped benchmark graph built from the shared WebQSP / CWQ samples (no Freebase graph is available
offline), and the questions in canonical JSONL.

    python -m bench.freebase_fixture --out work/bench/freebase_fixture   # graph.nt.gz, questions.jsonl, report.json

How the graph is made (deterministic: every random choice is drawn from ``random.Random(seed:question id)``):

1. **Gold patterns.** Each question's SPARQL (WebQSP: ``Parses[0].Sparql``; CWQ: ``sparql``) is read line by line:
   ``#`` comments dropped, ``;`` continuations expanded, and only the basic triple patterns kept — every line of a
   ``FILTER(...)`` (with its ``EXISTS {…}`` blocks) and the ``ORDER BY`` / ``LIMIT`` tail are skipped. Each pattern
   is instantiated once per gold answer with ``?x`` := that answer. Other variables:
   - a variable used in a FILTER comparison or in ORDER BY (``?num``, ``?yr``, ``?sk1``…) is a **literal**
     (a date ``xsd:date`` when the relation's last segment says date/year/from/to/start/end, else ``xsd:integer``);
   - ``?y``, ``?k``, ``?z``, ``?w`` are the samples' **mediator (CVT)** variables: fresh **unnamed** nodes
     (``m.fx_cvt…``), one per answer when the variable touches ``?x``, else one per question;
   - any other variable (``?c``: CWQ's named intermediate, ``?awd``) is a **named** entity shared by the
     question's answers, its name drawn from the name pool (below).
   Real MIDs are kept (topic entities, WebQSP answers, constants); a constant with no known name gets a pool name.
   CWQ answers are names only: a name known with a MID from either file reuses that MID, else an id
   ``m.fx_<sha1(name)[:8]>`` is minted (the same name → the same entity across questions). WebQSP value answers
   are literals (``xsd:gYear`` / ``xsd:date`` / ``xsd:integer`` by their form, else a plain string).
2. **Distractors** (so that ranking is not trivial), per question:
   - around each topic: 6 relations from ``filtered_cwq_white_list.json``, never one of the question's own
     relations: 4 out-edges, 70 % of the topic's own types (the types of the gold relations it is the subject
     of, e.g. other ``people.person.*`` — a Freebase entity only has its types' properties), else of the same
     domains but not of a CVT type of the question; 2 in-edges of the same domains; to pool-named entities or,
     for date-like relations, date literals;
   - sibling CVT edges: each gold CVT gets 2 more whitelisted relations of its own CVT type (``people.marriage``
     → ``people.marriage.from`` …), and the topic gets one sibling CVT of the same type by the same first
     relation, carrying only those other relations (so "who" vs "when" vs "where" chains share a first hop);
   - every entity answer gets 2 out-edges (whitelisted relations) to pool-named entities;
   - questions whose SPARQL has a constraint FILTER (dates, comparisons) or ORDER BY: 2 distractor answers are
     instantiated on the same patterns (they would fail the filter or sort later), so their gold set is NOT
     separable by a chain — a chain ranker's F1 on them is bounded (the report counts them).
   The name pool is every name the two files give (topics, WebQSP answers, constraint entities, CWQ answers).
   **Realism rule** (added after diagnosing the ranker's misses, see bench/zero_shot_kg.py): a distractor edge
   between two *named* entities (around the topics, out of the answers) never uses a relation that some sample's
   SPARQL uses *out of* a mediator (CVT) variable (``location.imports_and_exports.exported_from``) or *into* one
   (``film.actor.film``, ``people.person.employment_history``). In Freebase those properties belong to CVT types
   or point to CVTs, so they never link two named entities; the earlier fixture wrote such edges (e.g.
   ``NIKE India Holding B.V. -film.actor.film-> The Lion King``), in-edge and out-edge distractors that real
   Freebase cannot hold. The rule is read from the samples' patterns only (no answers, no hand list), and the
   CVT sibling edges still use the CVT types' properties, on CVTs.
3. Names are ``ns:type.object.name "…"@en``; namespace ``http://rdf.freebase.com/ns/``.

Questions (``questions.jsonl``): ``{"question", "topic_entities": [MID…], "answers": [id or literal value…],
"split": "test"}`` plus ``id``, ``dataset`` (``webqsp``/``cwq``), ``kind`` (``webqsp`` or CWQ's
compositionality type), ``answer_names``, ``needs_filter`` (bool). Excluded (counted in ``report.json``):
questions with no gold answer, no topic entity, or no triple pattern with ``?x``.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import random
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kgrag.data.freebase import FREEBASE_NS, read_relation_whitelist

__all__ = ["FixtureQuestion", "build_fixture", "main", "parse_patterns"]

NAME = "type.object.name"
XSD = "http://www.w3.org/2001/XMLSchema#"
CVT_VARS = frozenset({"y", "k", "z", "w"})
DISTRACTOR_RELATIONS = 6
_TERM = r'(?:"(?:[^"\\]|\\.)*"(?:@[\w-]+|\^\^\S+)?|\S+)'
_PATTERN = re.compile(rf"^({_TERM})\s+({_TERM})\s+({_TERM})\s*([.;]?)\s*$")
_DATE_WORDS = re.compile(r"(date|year|from|to|start|end|founded|born|died)$")


@dataclass
class FixtureQuestion:
    id: str
    dataset: str
    kind: str
    question: str
    topics: dict[str, str]
    answers: list[tuple[str, str, bool]]  # (id or value, name, is_literal)
    patterns: list[tuple[str, str, str]]
    literal_vars: set[str] = field(default_factory=set)
    needs_filter: bool = False


def _strip_comment(line: str) -> str:
    out, quoted = [], False
    for ch in line:
        if ch == '"':
            quoted = not quoted
        if ch == "#" and not quoted:
            break
        out.append(ch)
    return "".join(out).strip()


def parse_patterns(sparql: str) -> tuple[list[tuple[str, str, str]], set[str], bool]:
    """The basic triple patterns of a WebQSP/CWQ query, the variables used in FILTER/ORDER BY (literals), and
    whether it constrains ``?x`` beyond its patterns (a FILTER other than the two standard ones, or ORDER BY)."""
    body = sparql.split("WHERE", 1)[1] if "WHERE" in sparql else sparql
    patterns: list[tuple[str, str, str]] = []
    filtered: set[str] = set()
    constrained = False
    depth = 0  # open parentheses of a FILTER spanning lines
    subject: str | None = None
    for raw in body.splitlines():
        line = _strip_comment(raw).lstrip("{} \t")
        if line.startswith("UNION"):
            constrained = True  # a UNION: instantiating both branches over-generates; counted as filtered
            continue
        if depth or line.startswith("FILTER"):
            standard = line.startswith("FILTER (?x != ") or "isLiteral(?x)" in line
            if not standard and not depth:
                constrained = True
            if not standard:
                filtered |= set(re.findall(r"\?(\w+)", line))
            depth += line.count("(") - line.count(")")
            depth = max(depth, 0)
            continue
        if line.startswith(("ORDER BY", "LIMIT", "OFFSET")):
            constrained = True
            filtered |= set(re.findall(r"\?(\w+)", line))
            continue
        if not line or line in ("{", "}"):
            continue
        parts = re.match(rf"^({_TERM})\s+({_TERM})\s*([.;]?)\s*$", line) if subject is not None else None
        match = _PATTERN.match(line)
        if parts:  # after a ';' continuation: predicate object
            s, (p, o, end) = subject, parts.groups()
        elif match:
            s, p, o, end = match.groups()
            subject = s
        else:
            continue
        if p.startswith("ns:"):
            patterns.append((s, p[3:], o))
        subject = s if end == ";" else None
    filtered -= {"x"} | {s[1:] for s, _, _ in patterns if s.startswith("?")}  # a subject is a node
    return patterns, filtered, constrained


def _load(data_dir: Path) -> tuple[list[FixtureQuestion], Counter]:
    excluded: Counter = Counter()
    out: list[FixtureQuestion] = []
    known: dict[str, str] = {}  # name -> MID (every name the files pair with a MID)
    webqsp = json.loads((data_dir / "webqsp_100.json").read_text(encoding="utf-8"))
    cwq = json.loads((data_dir / "cwq_300.json").read_text(encoding="utf-8"))
    for q in webqsp:
        for parse in q["Parses"][:1]:
            known.setdefault(parse.get("TopicEntityName") or "", parse.get("TopicEntityMid") or "")
            for a in parse["Answers"]:
                if a["AnswerType"] == "Entity" and a.get("EntityName"):
                    known.setdefault(a["EntityName"], a["AnswerArgument"])
            for c in parse.get("Constraints") or []:
                if c.get("EntityName") and c.get("ArgumentType") == "Entity":
                    known.setdefault(c["EntityName"], c["Argument"])
    for q in cwq:
        for mid, name in q["topic_entity"].items():
            known.setdefault(name, mid)
    known.pop("", None)
    for q in webqsp:
        parse = q["Parses"][0]
        topic = parse.get("TopicEntityMid")
        if not topic:
            excluded["webqsp: no topic entity"] += 1
            continue
        answers = [(a["AnswerArgument"], a.get("EntityName") or a["AnswerArgument"], a["AnswerType"] != "Entity")
                   for a in parse["Answers"]]
        if not answers:
            excluded["webqsp: no gold answer"] += 1
            continue
        patterns, filtered, constrained = parse_patterns(parse["Sparql"])
        if not any("?x" in (s, o) for s, _, o in patterns):
            excluded["webqsp: no triple pattern with ?x"] += 1
            continue
        topics = {topic: parse.get("TopicEntityName") or topic}
        out.append(FixtureQuestion(q["QuestionId"], "webqsp", "webqsp", q["RawQuestion"], topics, answers,
                                   patterns, filtered, constrained))
    for q in cwq:
        name = q["answer"].strip()
        if not name:
            excluded["cwq: no gold answer"] += 1
            continue
        if not q["topic_entity"]:
            excluded["cwq: no topic entity"] += 1
            continue
        mid = known.get(name) or "m.fx_" + hashlib.sha1(name.encode()).hexdigest()[:8]
        patterns, filtered, constrained = parse_patterns(q["sparql"])
        if not any("?x" in (s, o) for s, _, o in patterns):
            excluded["cwq: no triple pattern with ?x"] += 1
            continue
        out.append(FixtureQuestion(q["ID"], "cwq", q["compositionality_type"], q["question"],
                                   dict(q["topic_entity"]), [(mid, name, False)], patterns, filtered,
                                   constrained))
    return out, excluded


class _Writer:
    def __init__(self) -> None:
        self.lines: set[str] = set()
        self.names: dict[str, str] = {}

    def node(self, local: str) -> str:
        return f"<{FREEBASE_NS}{local}>"

    def name(self, node: str, name: str) -> None:
        if node not in self.names:
            self.names[node] = name
            self.lines.add(f"{self.node(node)} {self.node(NAME)} {_lit(name)}@en .")

    def edge(self, s: str, p: str, o: str) -> None:
        tail = o if o.startswith('"') else self.node(o)
        self.lines.add(f"{self.node(s)} {self.node(p)} {tail} .")


def _lit(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _typed(value: str) -> str:
    """An N-Triples literal for a value answer: year, date, integer, else a plain string."""
    if re.fullmatch(r"-?\d{4}", value):
        return f'{_lit(value)}^^<{XSD}gYear>'
    if re.fullmatch(r"-?\d{4}-\d\d-\d\d", value):
        return f'{_lit(value)}^^<{XSD}date>'
    if re.fullmatch(r"-?\d+", value):
        return f'{_lit(value)}^^<{XSD}integer>'
    return _lit(value)


def _random_literal(relation: str, rng: random.Random) -> str:
    last = relation.rsplit(".", 1)[-1]
    if _DATE_WORDS.search(last):
        return f'{_lit(f"{rng.randint(1900, 2014)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}")}^^<{XSD}date>'
    return f'{_lit(str(rng.randint(1, 90000)))}^^<{XSD}integer>'


def build_fixture(data_dir: Path, out_dir: Path, seed: int = 0) -> dict[str, Any]:
    """Write ``graph.nt.gz``, ``questions.jsonl`` and ``report.json`` under ``out_dir``; return the report."""
    questions, excluded = _load(data_dir)
    whitelist = read_relation_whitelist(data_dir / "filtered_cwq_white_list.json")
    by_domain: dict[str, list[str]] = {}
    by_type: dict[str, list[str]] = {}
    for rel in whitelist:
        parts = rel.split(".")
        by_domain.setdefault(parts[0], []).append(rel)
        by_type.setdefault(".".join(parts[:2]), []).append(rel)
    cvt_relations = {p for q in questions for s, p, o in q.patterns  # see the realism rule
                     if s[1:] in CVT_VARS and s.startswith("?") or o[1:] in CVT_VARS and o.startswith("?")}
    named_ok = [r for r in whitelist if r not in cvt_relations]
    pool = sorted({n for q in questions for n in q.topics.values()} | {a[1] for q in questions for a in q.answers
                                                                        if not a[2]})
    w = _Writer()
    serial = Counter()

    def fresh(kind: str) -> str:
        serial[kind] += 1
        return f"m.fx_{kind}{serial[kind]}"

    def distractor(rng: random.Random) -> str:
        node = fresh("d")
        w.name(node, rng.choice(pool))
        return node

    for q in questions:
        rng = random.Random(f"{seed}:{q.id}")
        for mid, name in q.topics.items():
            w.name(mid, name)
        answers = list(q.answers)
        if q.needs_filter:  # 2 more bindings of ?x that a filter / ORDER BY would drop
            answers += [(distractor(rng), "", False) for _ in range(2)]
        shared: dict[str, str] = {}
        answer_vars = {v for s, _, o in q.patterns for v in (s, o) if "?x" in (s, o)}
        gold_cvts: list[tuple[str, str, str]] = []  # (cvt node, first relation from the topic, its CVT type)
        for value, name, is_literal in answers:
            if not is_literal and name:
                w.name(value, name)
            binding: dict[str, str] = {"?x": _typed(value) if is_literal else value}
            for s, p, o in q.patterns:
                terms = []
                for term in (s, o):
                    if term.startswith("ns:"):
                        mid = term[3:]
                        if mid not in w.names:
                            w.name(mid, q.topics.get(mid) or rng.choice(pool))
                        terms.append(mid)
                    elif term.startswith('"'):
                        terms.append(term if "^^xsd:" not in term else term.replace("^^xsd:", f"^^<{XSD}") + ">")
                    elif term.startswith("?"):
                        var = term[1:]
                        if term not in binding:
                            if var in q.literal_vars:
                                binding[term] = _random_literal(p, rng)
                            elif var in CVT_VARS:
                                per_answer = term in answer_vars
                                if per_answer or term not in shared:
                                    node = fresh("cvt")
                                    if not per_answer:
                                        shared[term] = node
                                binding[term] = node if per_answer else shared[term]
                            else:
                                if term not in shared:
                                    shared[term] = distractor(rng)
                                binding[term] = shared[term]
                        terms.append(binding[term])
                    else:
                        terms.append(term)
                head, tail = terms
                if head.startswith('"'):
                    continue  # a literal subject: not a graph pattern we can write
                w.edge(head, p, tail)
                if s.startswith("ns:") and s[3:] in q.topics and o[1:] in CVT_VARS and o.startswith("?"):
                    gold_cvts.append((tail, p, ""))
            for s, p, _o in q.patterns:  # the gold CVT's type: the prefix of the relation leaving it
                for i, (cvt, first, _) in enumerate(gold_cvts):
                    if s.startswith("?") and binding.get(s) == cvt and not gold_cvts[i][2]:
                        gold_cvts[i] = (cvt, first, ".".join(p.split(".")[:2]))
        for cvt, first, cvt_type in gold_cvts:  # sibling CVT edges
            others = [r for r in by_type.get(cvt_type, []) if not any(r == p for _, p, _ in q.patterns)]
            if not others:
                continue
            extra = rng.sample(others, min(2, len(others)))
            sibling = fresh("cvt")
            topic = next(iter(q.topics))
            w.edge(topic, first, sibling)
            for rel in extra:
                for node in (cvt, sibling):
                    last = rel.rsplit(".", 1)[-1]
                    w.edge(node, rel, _random_literal(rel, rng) if _DATE_WORDS.search(last) else distractor(rng))
        gold = {p for _, p, _ in q.patterns}
        cvt_types = {".".join(p.split(".")[:2]) for s, p, _ in q.patterns if s[1:] in CVT_VARS}
        domains = sorted({p.split(".")[0] for p in gold})
        for topic in q.topics:  # distractor relations around each topic, of the topic's own types
            own = sorted({".".join(p.split(".")[:2]) for s, p, _ in q.patterns if s == f"ns:{topic}"})
            mine = [r for t in own for r in by_type.get(t, []) if r not in gold and r not in cvt_relations]
            near = [r for d in domains for r in by_domain.get(d, []) if r not in gold and r not in cvt_relations
                    and ".".join(r.split(".")[:2]) not in cvt_types]
            for i in range(DISTRACTOR_RELATIONS):
                choices = mine if mine and i < 4 and rng.random() < 0.7 else near or named_ok
                rel = rng.choice(choices)
                if _DATE_WORDS.search(rel.rsplit(".", 1)[-1]) and i < 4:
                    w.edge(topic, rel, _random_literal(rel, rng))
                elif i < 4:
                    w.edge(topic, rel, distractor(rng))
                else:
                    w.edge(distractor(rng), rel, topic)
        for value, _, is_literal in answers:  # answers are not leaves
            if not is_literal:
                for rel in rng.sample(named_ok, 2):
                    w.edge(value, rel, distractor(rng))
    out_dir.mkdir(parents=True, exist_ok=True)
    graph = out_dir / "graph.nt.gz"
    with gzip.GzipFile(graph, "wb", mtime=0) as fh:
        fh.write(("\n".join(sorted(w.lines)) + "\n").encode("utf-8"))
    rows = [{"question": q.question, "topic_entities": list(q.topics), "answers": [a[0] for a in q.answers],
             "split": "test", "id": q.id, "dataset": q.dataset, "kind": q.kind,
             "answer_names": [a[1] for a in q.answers], "needs_filter": q.needs_filter} for q in questions]
    (out_dir / "questions.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                                            encoding="utf-8")
    report = {"triples": len(w.lines), "named_entities": len(w.names), "cvts": serial["cvt"],
              "questions": dict(Counter(q.dataset for q in questions)),
              "kinds": dict(Counter(f"{q.dataset}:{q.kind}" for q in questions)),
              "needs_filter_or_order": dict(Counter(q.dataset for q in questions if q.needs_filter)),
              "excluded": dict(excluded), "seed": seed}
    (out_dir / "report.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--data", type=Path, default=None, help="the freebase/ data folder")
    parser.add_argument("--out", type=Path, default=Path("work/bench/freebase_fixture"))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.data is None:
        from kgrag.config import get_settings

        args.data = get_settings().data_dir / "freebase"
    print(json.dumps(build_fixture(args.data, args.out, args.seed), indent=2))


if __name__ == "__main__":
    main()

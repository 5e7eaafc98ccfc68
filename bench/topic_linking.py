"""Topic linking on natural Freebase questions (WebQSP / CWQ as people typed them): is the question's gold topic
the linker's first candidate, in its top 3, in its top 5 — against the linker as it was before issue 44, in the
same run.

    python -m bench.topic_linking [--split dev|held_out|all] [--misses] [--metaqa N]   # bench/results/topic_linking.json

Graph and questions: :mod:`bench.freebase_fixture` (built from the shared WebQSP / CWQ samples into a temp folder),
imported as an own KG is (:func:`kgrag.data.triples.read_triple_files` → :func:`kgrag.graph.imported.imported_csr`,
what ``kgrag prepare --triples`` stores), linked by :class:`kgrag.hrag.online.linker.EntityLinker.from_graph` — the
linker :class:`kgrag.agent.kg.triple_kg.TripleKG` holds. A question counts at rank k when any of its topic ids
(``topic_entities``) is among the first k distinct rows. Methods:

* ``candidates``: :meth:`EntityLinker.candidates` (``TripleKG.candidates``: what the query-graph planner reads);
* ``link``: :meth:`EntityLinker.link` with ``top=5`` (``TripleKG.link``: the agent's topic);
* baseline ``before``: the linker of commit :data:`BASELINE_COMMIT` (before issue 44: exact / normalised names and
  near-misses, no other names, surnames, plurals or class nodes), read with ``git show`` into a temp module,
  ``link(top=5)``.

Splits: each question's split is a seeded hash of its id (:func:`split_of`, about half each): rules were tuned on
``dev``; ``held_out`` is the figure to report. p50 ms is per question (one ``candidates`` / ``link`` call, warm).

``--metaqa N``: MetaQA linking unchanged — the first N dev questions of each hop with their ``[brackets]`` removed,
linked without templates by both linkers: the share whose first link is the bracketed name (and first candidate, for
the current one), and the share where the two linkers choose the same row.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from bench.common import write_result
from bench.freebase_fixture import build_fixture

#: the linker before issue 44 (the commit that started it: query-graph model, linker untouched)
BASELINE_COMMIT = "b990697"
SPLITS = ("dev", "held_out")
RANKS = (1, 3, 5)
REPO = Path(__file__).resolve().parent.parent


def split_of(question_id: str, seed: int = 0) -> str:
    """``dev`` or ``held_out`` by a seeded hash of the question's id (stable across runs and machines)."""
    digest = hashlib.sha1(f"topic-linking:{seed}:{question_id}".encode()).digest()
    return "dev" if digest[0] % 2 == 0 else "held_out"


def baseline_module(commit: str = BASELINE_COMMIT) -> ModuleType:
    """The linker module of ``commit``, imported from a temp file (it imports only kgrag modules that still exist)."""
    try:
        source = subprocess.run(["git", "show", f"{commit}:kgrag/hrag/online/linker.py"], cwd=REPO, check=True,
                                capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        raise SystemExit(f"cannot read the baseline linker of commit {commit} with git: {exc}") from None
    folder = Path(tempfile.mkdtemp(prefix="linker-before-"))
    path = folder / "linker_before.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("linker_before", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["linker_before"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    shutil.rmtree(folder, ignore_errors=True)
    return module


def fixture_graph(folder: Path, seed: int = 0) -> tuple[Any, list[dict[str, Any]], dict[str, Any]]:
    """(graph, questions, fixture report) of the Freebase fixture built and imported under ``folder``."""
    from kgrag.config import get_settings
    from kgrag.data.spec import imported_namespace
    from kgrag.data.triples import read_triple_files
    from kgrag.graph.imported import imported_csr

    report = build_fixture(get_settings().data_dir / "freebase", folder / "fixture", seed=seed)
    graph = imported_csr(read_triple_files([folder / "fixture" / "graph.nt.gz"]), "fbfixture",
                         imported_namespace("fbfixture"), "en")
    with (folder / "fixture" / "questions.jsonl").open(encoding="utf-8") as fh:
        questions = [json.loads(line) for line in fh]
    return graph, questions, report


def gold_rows(graph: Any, topic_ids: Sequence[str]) -> set[int]:
    """The rows of a question's topic MIDs (the fixture keeps them under Freebase's namespace)."""
    from kgrag.graph.iri import FREEBASE_NS

    index = graph.key_index
    return {int(index[FREEBASE_NS + mid]) for mid in topic_ids if (FREEBASE_NS + mid) in index}


def rank_of(rows: Sequence[int], gold: set[int]) -> int | None:
    """0-based rank of the first gold row among the distinct ``rows``; None when none is gold."""
    seen: list[int] = []
    for row in rows:
        if row not in seen:
            seen.append(row)
            if row in gold:
                return len(seen) - 1
    return None


def _summary(records: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(records)
    out: dict[str, Any] = {"n": n}
    for k in RANKS:
        out[f"top{k}"] = round(sum(r["rank"] is not None and r["rank"] < k for r in records) / n, 4) if n else 0.0
    out["p50_ms"] = round(statistics.median(r["ms"] for r in records), 3) if n else 0.0
    return out


def measure(methods: dict[str, Callable[[str], list[int]]], graph: Any, questions: list[dict[str, Any]],
            seed: int = 0, misses: bool = False) -> dict[str, dict[str, dict[str, dict[str, Any]]]]:
    """method → split → set (``webqsp`` / ``cwq``) → {n, top1, top3, top5, p50_ms}; ``misses``: print dev misses."""
    per: dict[str, dict[str, dict[str, list[dict[str, Any]]]]] = {m: {} for m in methods}
    for q in questions:
        gold = gold_rows(graph, q["topic_entities"])
        split = split_of(q["id"], seed)
        for method, rows_of in methods.items():
            started = time.perf_counter()
            rows = rows_of(q["question"])
            ms = (time.perf_counter() - started) * 1000
            rank = rank_of(rows, gold)
            per[method].setdefault(split, {}).setdefault(q["dataset"], []).append({"rank": rank, "ms": ms})
            if misses and split == "dev" and method == "candidates" and rank != 0:
                names = graph.entity_names
                print(f"MISS {q['dataset']:6} {q['question']!r} gold={[names[g] for g in gold]} "
                      f"got={[names[r] for r in dict.fromkeys(rows)][:3]}")
    return {m: {split: {name: _summary(recs) for name, recs in sorted(sets.items(), key=lambda kv: kv[0] != "webqsp")}
                for split, sets in sorted(splits.items())} for m, splits in per.items()}


def metaqa_agreement(before: ModuleType, per_hop: int) -> dict[str, Any]:
    """MetaQA dev questions with brackets removed, linked without templates by the current and the baseline linker:
    the share whose first link is the bracketed name (each; and first candidate, now), and the share where both
    choose the same row."""
    from kgrag.config import get_settings
    from kgrag.data.metaqa import TOPIC_SPAN, read_kb
    from kgrag.graph.csr import CSRGraph
    from kgrag.hrag.online.linker import EntityLinker

    folder = get_settings().data_dir / "metaqa"
    graph = CSRGraph.from_dataset(read_kb(folder / "kb.txt"))
    now, old = EntityLinker.from_graph(graph), before.EntityLinker.from_graph(graph)
    names = graph.entity_names
    right_now = right_old = right_candidates = same = n = 0
    for hop in ("1-hop", "2-hop", "3-hop"):
        lines = (folder / hop / "dev.txt").read_text(encoding="utf-8").splitlines()[:per_hop]
        for line in lines:
            text = line.split("\t", 1)[0]
            match = TOPIC_SPAN.search(text)
            if match is None:
                continue
            plain = TOPIC_SPAN.sub(lambda m: m.group(1), text)
            a, b = now.link(plain, top=1), old.link(plain, top=1)
            n += 1
            right_now += bool(a) and names[a[0].entity] == match.group(1)
            right_old += bool(b) and names[b[0].entity] == match.group(1)
            c = now.candidates(plain, top=1)
            right_candidates += bool(c) and names[c[0].link.entity] == match.group(1)
            same += [x.entity for x in a] == [x.entity for x in b]
    return {"n": n, "top1": round(right_now / n, 4), "top1_before": round(right_old / n, 4),
            "candidates_top1": round(right_candidates / n, 4), "same_row_as_before": round(same / n, 4)}


def _table(figures: dict[str, Any]) -> str:
    head = f"{'split':<10}{'set':<8}{'n':>5}  {'method':<11}{'top1':>7}{'top3':>7}{'top5':>7}{'p50 ms':>9}"
    lines = [head, "-" * len(head)]
    for split in SPLITS:
        for name in ("webqsp", "cwq"):
            for method in ("before", "link", "candidates"):
                row = figures.get(method, {}).get(split, {}).get(name)
                if row:
                    lines.append(f"{split:<10}{name:<8}{row['n']:>5}  {method:<11}{row['top1']:>7.3f}"
                                 f"{row['top3']:>7.3f}{row['top5']:>7.3f}{row['p50_ms']:>9.2f}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--split", choices=(*SPLITS, "all"), default="all", help="questions measured")
    parser.add_argument("--seed", type=int, default=0, help="fixture seed and split seed")
    parser.add_argument("--misses", action="store_true", help="print the dev questions `candidates` misses at 1")
    parser.add_argument("--metaqa", type=int, default=0, metavar="N",
                        help="also link the first N MetaQA dev questions per hop, brackets removed, both linkers")
    parser.add_argument("--no-write", action="store_true", help="print only (while tuning on dev)")
    args = parser.parse_args(argv)

    from kgrag.hrag.online.linker import EntityLinker

    before = baseline_module()
    folder = Path(tempfile.mkdtemp(prefix="topic-linking-"))
    try:
        graph, questions, report = fixture_graph(folder, args.seed)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if args.split != "all":
        questions = [q for q in questions if split_of(q["id"], args.seed) == args.split]
    now, old = EntityLinker.from_graph(graph), before.EntityLinker.from_graph(graph)
    methods: dict[str, Callable[[str], list[int]]] = {
        "candidates": lambda text: [c.link.entity for c in now.candidates(text, top=5)],
        "link": lambda text: [li.entity for li in now.link(text, top=5)],
        "before": lambda text: [li.entity for li in old.link(text, top=5)],
    }
    for q in questions[:20]:  # warm caches (token normalisation) for every method alike
        for rows_of in methods.values():
            rows_of(q["question"])
    measured = measure(methods, graph, questions, args.seed, args.misses)
    print(_table(measured))
    figures: dict[str, Any] = {m: measured[m] for m in ("candidates", "link")}
    figures["fixture"] = {"triples": report["triples"], "questions": report["questions"], "seed": args.seed}
    if args.metaqa:
        figures["metaqa_dev_link"] = metaqa_agreement(before, args.metaqa)
        print("MetaQA dev, brackets removed, no templates:", figures["metaqa_dev_link"])
    ratio = {f"{split}:{name}": round(row["top1"] / measured["before"][split][name]["top1"], 3)
             for split, sets in measured["candidates"].items() for name, row in sets.items()
             if measured["before"][split][name]["top1"]}
    if not args.no_write:
        write_result("topic_linking", figures, {"before": measured["before"], "commit": BASELINE_COMMIT}, ratio,
                     f"{args.split} (seeded hash of the question id; fixture from webqsp_100 + cwq_300)",
                     len(questions))


if __name__ == "__main__":
    main()

"""What a broken Turtle file costs an import: edges and names kept, statements reported, seconds — with the reader
parsing again past an unterminated string (pyoxigraph reads one to the end of the file) against the baseline that
does not (``_MAX_RESUMES = 0``: what an import lost before, now at least counted), and a clean file's read as the
cost reference.

Data: a seeded Turtle graph of ``--people`` named nodes (two statements each over two lines: a label and a link to
another node), written with ``--breaks`` unterminated strings at evenly spaced lines (the first at a third of the
file). Figures per variant: edges, named nodes, reported errors (``bad_lines``), lines not read, seconds (best of 3).

Run: ``python -m bench.loud_import [--people 300000 --breaks 1]``; writes bench/results/loud_import.json.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from bench.common import write_result
from kgrag.data import triples

console = Console()


def write_turtle(path: Path, people: int, breaks: int, seed: int = 0) -> int:
    """The graph (see the module docstring); returns its edges."""
    rng = random.Random(seed)
    at = {people // 3 + k * (people * 2 // 3) // max(breaks, 1) for k in range(breaks)}
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("@prefix ex: <http://example.org/> .\n@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n")
        for i in range(people):
            fh.write(f'ex:p{i} rdfs:label "Person {i}" ;\n    ex:knows ex:p{rng.randrange(people)} .\n')
            if i in at:
                fh.write(f'ex:broken{i} rdfs:label "never closed .\n')
    return people


def measure(path: Path, resumes: int) -> dict:
    """Read ``path`` with at most ``resumes`` parses again per file; best of 3 seconds."""
    saved = triples._MAX_RESUMES
    triples._MAX_RESUMES = resumes
    try:
        best, graph = float("inf"), None
        for _ in range(3):
            started = time.perf_counter()
            graph = triples.read_triple_files([path], max_bad_lines=10**6)
            best = min(best, time.perf_counter() - started)
    finally:
        triples._MAX_RESUMES = saved
    assert graph is not None
    return {"edges": len(graph.head), "named_nodes": sum(1 for n in graph.names if n.startswith("Person ")),
            "reported_errors": graph.bad_lines, "lines_not_read": graph.unread_lines, "seconds": round(best, 3)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--people", type=int, default=300_000)
    parser.add_argument("--breaks", type=int, default=1)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        clean, broken = Path(tmp) / "clean.ttl", Path(tmp) / "broken.ttl"
        edges = write_turtle(clean, args.people, 0)
        write_turtle(broken, args.people, args.breaks)
        reference = measure(clean, triples._MAX_RESUMES)
        resumed = measure(broken, triples._MAX_RESUMES)
        baseline = measure(broken, 0)
    table = Table("variant", "edges", "named nodes", "reported errors", "lines not read", "seconds")
    for label, row in (("clean file", reference), ("broken: parsed again (this reader)", resumed),
                       ("broken: no resume (baseline)", baseline)):
        table.add_row(label, *(f"{row[k]:,}" for k in ("edges", "named_nodes", "reported_errors",
                                                        "lines_not_read")), f"{row['seconds']:.2f}")
    console.print(table)
    ratio = {"edges_kept": round(resumed["edges"] / max(baseline["edges"], 1), 3),
             "share_of_clean_edges": round(resumed["edges"] / edges, 4),
             "seconds_vs_clean": round(resumed["seconds"] / max(reference["seconds"], 1e-9), 3)}
    write_result("loud_import", {"resumed": resumed, "clean": reference}, {"no_resume": baseline}, ratio,
                 split=f"{args.people} people, {args.breaks} unterminated strings", n=edges)


if __name__ == "__main__":
    main()

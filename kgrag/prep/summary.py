"""The data-prep summary: one table of counts, as markdown (Prefect artifact, file) and JSON."""

from __future__ import annotations

import json
from pathlib import Path

from kgrag.fileio import atomic_write, write_json


def summary_rows(dataset: str, graph: dict, store: dict, questions: dict) -> list[tuple[str, str]]:
    rows = [
        ("dataset", dataset),
        ("entities", f"{graph['entities']:,}"),
        ("named entities", f"{graph['named_entities']:,}"),
        ("relations", f"{graph['relations']:,}"),
        ("triples (unique edges)", f"{graph['triples']:,}"),
        ("duplicate edges dropped", f"{graph['duplicates_dropped']:,}"),
        ("malformed KB lines", f"{graph['malformed_lines']:,}"),
        *((("KB lines not read (the parser could not resume)", f"{graph['unread_lines']:,}"),)
          if "unread_lines" in graph else ()),
        *((("unnamed (mediator / CVT) nodes", f"{graph['unnamed_nodes']:,}"),
           ("name triples read (names, not edges)", f"{graph['name_triples']:,}")) if "unnamed_nodes" in graph else ()),
        *((("other names of nodes (aliases)", f"{graph['other_names']:,}"),
           ("relations named by their property's label", f"{graph['labelled_relations']:,}"),
           ("property triples (schema, not edges)", f"{graph['property_triples']:,}")) if "other_names" in graph
          else ()),
        ("RDF triples written (edges + names + values)", f"{graph['rdf_triples']:,}"),
        ("RDF triples in Oxigraph store", f"{store['store_triples']:,}"),
        ("questions", f"{questions['questions']:,}"),
    ]
    for split, hops in sorted(questions["per_split_hop"].items()):
        for hop, n in sorted(hops.items()):
            rows.append((f"questions {split} {hop}", f"{n:,}"))
    total = questions["questions"]
    unreachable = questions["unreachable_within_3"]
    rows += [
        ("questions with unresolved topic entity", f"{questions['unresolved_topic']:,}"),
        ("answer names not found in the graph", f"{questions['unresolved_answers']:,}"),
        ("questions whose answers are unreachable within 3 hops", f"{unreachable:,} / {total:,}"),
        ("malformed question lines", f"{questions['malformed_lines']:,}"),
    ]
    rows += [(f"references resolved by {how}", f"{n:,}") for how, n in sorted(questions.get("resolved_by", {}).items())]
    rows += [(f"references unresolved ({why})", f"{n:,}")
             for why, n in sorted(questions.get("unresolved_by", {}).items())]
    return rows


def summary_markdown(rows: list[tuple[str, str]]) -> str:
    lines = ["| item | value |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in rows]
    return "\n".join(lines) + "\n"


def write_summary(out_dir: Path, dataset: str, graph: dict, store: dict, questions: dict) -> str:
    """Write ``summary.md`` and ``summary.json``; return the markdown."""
    rows = summary_rows(dataset, graph, store, questions)
    markdown = f"# Data prep: {dataset}\n\n" + summary_markdown(rows)
    atomic_write(out_dir / "summary.md", lambda tmp: tmp.write_text(markdown, encoding="utf-8"))
    payload = {"dataset": dataset, "graph": graph, "store": store, "questions": questions}
    write_json(out_dir / "summary.json", payload, indent=2)
    return markdown


def read_summary(out_dir: Path) -> dict:
    """What :func:`write_summary` wrote as JSON (``{}`` when the dataset is not prepared or the file is unreadable)."""
    try:
        return json.loads((out_dir / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}

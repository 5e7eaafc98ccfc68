"""A query-mode result as people read it: a rich tree of keywords, what was searched, the token count per
section, the top rows, and the response.

    console.print(result_summary("百日咳有哪些症状", kg_query(...)))
"""

from __future__ import annotations

from rich.markup import escape
from rich.tree import Tree

from kgrag.modes.params import QueryResult

__all__ = ["result_summary", "trace_summary"]


def trace_summary(raw: dict) -> str:
    """One line: mode, keywords source, rows kept and tokens per section (the agent's trace uses it)."""
    tokens = raw.get("tokens", {})
    return (f"mode={raw.get('mode')} keywords={raw.get('keywords', {}).get('source', '-')} "
            f"entities={len(raw.get('entities', []))}/{tokens.get('entities', 0)}tok "
            f"relations={len(raw.get('relations', []))}/{tokens.get('relations', 0)}tok "
            f"chunks={len(raw.get('chunks', []))}/{tokens.get('chunks', 0)}tok")


def result_summary(question: str, result: QueryResult, rows: int = 5) -> Tree:
    raw = result.raw_data
    tree = Tree(f"[bold]{escape(question)}[/] — mode [cyan]{raw.get('mode', '?')}[/]")
    keywords = raw.get("keywords")
    if keywords:
        tree.add(f"keywords ({keywords['source']}): high {escape(str(keywords['high_level']))} · "
                 f"low {escape(str(keywords['low_level']))}")
    if "searched" in raw:
        tree.add("searched: " + ", ".join(f"{k}={'yes' if v else 'no'}" for k, v in raw["searched"].items()))
    if "tokens" in raw:
        tree.add(escape(trace_summary(raw)))
        timings = raw.get("timings_ms", {})
        tree.add("ms: " + ", ".join(f"{k} {v:.1f}" for k, v in timings.items()))
    for section, label, fmt in (
        ("entities", "entities", lambda r: f"{r['entity']} ({r['type']})"),
        ("relations", "relations", lambda r: r["description"]),
        ("chunks", "chunks", lambda r: f"[{r['reference_id']}] {r['content'][:80]}…"),
    ):
        items = raw.get(section) or []
        if items:
            branch = tree.add(f"{label}: {len(items)} kept")
            for r in items[:rows]:
                branch.add(escape(fmt(r)))
    answer = result.response or "(no response: context only)"
    tree.add(f"[bold]response[/]: {escape(answer[:2000])}")
    return tree

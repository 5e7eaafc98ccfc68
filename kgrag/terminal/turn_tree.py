"""An agent turn as a readable tree (rich): keywords, recalled schema, storage forms, tool calls, evidence, answer
(``kgrag ask`` and the main job print it).

    from kgrag.terminal.turn_tree import state_tree; console.print(state_tree(state))
"""

from __future__ import annotations

import json
from typing import Any

from rich.markup import escape
from rich.tree import Tree

__all__ = ["state_tree"]


def _short(value: Any, limit: int = 160) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return escape(text if len(text) <= limit else text[: limit - 1] + "…")


def _plan_line(plan: dict[str, Any]) -> str:
    """A query graph's one line (its JSON cut short when it is not a valid plan)."""
    from kgrag.query_graph.plan import QueryGraph

    try:
        return QueryGraph.model_validate(plan).describe()
    except ValueError:
        return _short(plan)


def state_tree(state: dict[str, Any], evidence_rows: int = 8) -> Tree:
    """The turn's steps (with their milliseconds) under the question; the answer last."""
    where = f"kg {state['kg']}" if state.get("kg") else f"kn {state.get('kn_id')}"
    intents = (state.get("schema") or {}).get("ranker") if not state.get("kg") else None
    planner = state.get("planner", "rules") + (f", intents {intents}" if intents else "")
    root = Tree(f"[bold]{escape(state.get('question', ''))}[/]  [dim]({escape(where)}, planner {escape(planner)})[/]")
    for entry in state.get("trace", []):
        node = root.add(f"[cyan]{entry['node']}[/] [dim]{entry['ms']:.1f} ms[/]  {_short(entry['summary'])}")
        if entry["node"] == "schema_recall" and state.get("schema"):
            for label, p in state["schema"].get("intents", [])[:3]:
                node.add(f"{escape(label)}  p={p:.2f}")
            for chain in state["schema"].get("chains", [])[:3]:
                node.add(f"{escape(chain['chain'])}  p={chain['p']:.2f}")
        if entry["node"] == "contextual_recall":
            for form in state.get("context", {}).get("storage_forms", [])[:5]:
                where = form.get("object_type") or form.get("entity_id", "")
                node.add(f"{escape(form['keyword'])} → {escape(where)} "
                         f"[green]{escape(form['name'])}[/] ({form['match_type']})")
    plan = state.get("query_graph")
    if plan:
        line = _plan_line(plan)
        node = root.add(f"[cyan]query graph[/] [dim]confidence {float(state.get('confidence') or 0):.2f}[/]  "
                        f"{escape(line)}")
        for other in (state.get("query_graph_candidates") or [])[:3]:
            node.add(f"[dim]next: {escape(_plan_line(other))}  score {float(other.get('score') or 0):.2f}[/]")
        for part in state.get("unused") or []:
            node.add(f"[yellow]not used:[/] {escape(str(part))}")
    calls = root.add("[cyan]tool calls[/]")
    for call in state.get("tool_calls", []):
        status = f"[red]error: {_short(call['error'])}[/]" if call.get("error") else f"{call.get('ms', 0):.1f} ms"
        calls.add(f"{escape(call.get('name', ''))}({_short(call.get('args'), 200)}) {status}")
    evidence = root.add(f"[cyan]evidence[/] ({len(state.get('evidence', []))} rows)")
    for row in state.get("evidence", [])[:evidence_rows]:
        if "path" in row:  # a triple graph: an answer and the path that reaches it
            check = {True: " [green]✓ on the store[/]", False: " [red]✗ not on the store[/]"}.get(row["verified"], "")
            evidence.add(f"[green]{escape(row['answer'])}[/] {row['score']:.2f}: {escape(row['path'])}{check}")
            continue
        # a link walked against its relation reads backwards: Emma <-[wrote]- Jane Austen
        arrow = f"<-[{row['via']}]-" if row.get("direction") == "in" else f"-[{row['via']}]->"
        link = escape(f"{row['instance']} {arrow} ")  # brackets are not rich markup
        evidence.add(f"{link}[green]{escape(row['value'])}[/]")
    for error in state.get("errors", []):
        root.add(f"[yellow]note:[/] {escape(error)}")
    root.add(f"[bold]answer:[/] {escape(state.get('answer', ''))}")
    return root

"""What an import lost, said on the terminal: the statements and lines a prepare skipped (malformed input) and the
lines its parser never read, with the first reasons as ``file:line: reason`` — the same counts ``summary.json``
keeps (``malformed_lines``, ``unread_lines``, ``malformed_examples``, per file ``unread_after``).

    for line in loss_report(result["graph"], result["questions"]): print(line)   # [] when nothing was lost

Counts, honestly: ``malformed_lines`` is one per parser error — a TSV / N-Triples / N-Quads line, or in Turtle the
statement the error is in (its parser skips to the statement's end, often taking the next one with it: at least that
many statements lost); ``unread_lines`` are the lines after an error the parser could not resume from (an
unterminated string or IRI ran to the end of the file): their statements are lost, uncounted.
"""

from __future__ import annotations

__all__ = ["loss_headline", "loss_report"]


def loss_headline(graph: dict, questions: dict | None = None) -> str:
    """One line: how much the import lost (``""`` when nothing)."""
    skipped = int(graph.get("malformed_lines", 0))
    unread = int(graph.get("unread_lines", 0))
    bad_questions = int((questions or {}).get("malformed_lines", 0))
    parts = []
    if skipped:
        plural = "s" if skipped != 1 else ""
        parts.append(f"{skipped:,} malformed statement{plural} or line{plural} skipped")
    if unread:
        where = ", ".join(f"{f['path']}:{f['unread_after']}" for f in graph.get("files", ()) if f.get("unread_lines"))
        parts.append(f"{unread:,} lines not read after {where} (the parser could not resume: their statements "
                     "are lost)")
    resumed = [f"{f['path']}:{line}" for f in graph.get("files", ()) for line in f.get("resumed_after", ())]
    if resumed:
        parts.append(f"parsed again after {', '.join(resumed[:3])}{' …' if len(resumed) > 3 else ''} (an "
                     "unterminated string or IRI: the text up to there may have become one literal)")
    if bad_questions:
        parts.append(f"{bad_questions:,} malformed question line{'s' if bad_questions != 1 else ''} skipped")
    return "the import lost data: " + "; ".join(parts) if parts else ""


def loss_report(graph: dict, questions: dict | None = None, shown: int = 5) -> list[str]:
    """The headline, then the first ``shown`` reasons (``file:line: reason``) and how many more; ``[]`` when the
    import lost nothing."""
    headline = loss_headline(graph, questions)
    if not headline:
        return []
    lines = [headline]
    for label, part in (("", graph), ("questions: ", questions or {})):
        examples = list(part.get("malformed_examples") or ())
        total = int(part.get("malformed_lines", 0))
        lines += [f"  {label}{example}" for example in examples[:shown]]
        if total > min(shown, len(examples)):
            lines.append(f"  {label}… and {total - min(shown, len(examples)):,} more (the first "
                         f"{len(examples)} in summary.json; fix the file, or `--strict` to stop at the first)")
    return lines

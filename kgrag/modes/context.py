"""Stage 3 of the query modes: merge, deduplicate, truncate by tokens, and lay out the context (spec 阶段3).

    ctx = build_context(index, hits, param, fixed_tokens=prompt_tokens)   # ctx.text, ctx.tokens, ctx.raw

Budgets: entities ``max_entity_tokens``, relations ``max_relation_tokens``; chunks get what is left of
``max_total_tokens`` after the entities and relations actually kept and the prompt's fixed part
(``fixed_tokens``: template, question, history). A row is kept while the running total of its JSON line's
tokens (:class:`~kgrag.rank.token_count.TokenCounter`, counted in one batch per section) stays within the budget;
the first row that does not fit ends the section, so the kept rows are always a prefix of the ranked ones.
Chunks from the two routes (mix) are interleaved entity-route first and deduplicated by id; each distinct
source instance becomes one numbered reference, and a chunk carries its reference id.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from kgrag.modes.index import ModeIndex
from kgrag.modes.params import QueryParam
from kgrag.modes.search import SearchHits
from kgrag.rank.token_count import TokenCounter

__all__ = ["QueryContext", "build_context", "truncate", "interleave"]


@dataclass
class QueryContext:
    text: str
    entities: list[dict] = field(default_factory=list)
    relations: list[dict] = field(default_factory=list)
    chunks: list[dict] = field(default_factory=list)
    references: list[dict] = field(default_factory=list)
    tokens: dict[str, int] = field(default_factory=dict)
    dropped: dict[str, int] = field(default_factory=dict)


#: fewer tokens than any row's JSON line (its keys alone count 37+), so ``budget // MIN_ROW_TOKENS + 1`` rows
#: always hold every row that can fit: rows past that are never formatted or counted
MIN_ROW_TOKENS = 32


def _candidates(rows: np.ndarray, budget: int) -> np.ndarray:
    return rows[: max(budget, 0) // MIN_ROW_TOKENS + 1]


def _line(row: dict) -> str:
    return json.dumps(row, ensure_ascii=False)


def truncate(rows: list[dict], budget: int, counts: np.ndarray) -> tuple[list[dict], int]:
    """The longest prefix of ``rows`` whose token ``counts`` fit in ``budget``, and its token count."""
    if not rows or budget <= 0:
        return [], 0
    total = np.cumsum(counts)
    keep = int(np.searchsorted(total, budget, side="right"))
    return rows[:keep], int(total[keep - 1]) if keep else 0


def row_tokens(index: ModeIndex, kind: str, items: list[int], rows: list[dict], counter: TokenCounter,
               positional: str) -> np.ndarray:
    """Tokens of each row's JSON line: the line without its positional field (``positional``: numbering that
    changes per query) is counted once per item and memoised on the index, plus that field's framing."""
    out = np.zeros(len(rows), dtype=np.int64)
    missing = [i for i, item in enumerate(items) if (kind, item) not in index.memo]
    if missing:
        lines = [_line({k: v for k, v in rows[i].items() if k != positional}) for i in missing]
        for i, n in zip(missing, counter.count(lines).tolist(), strict=True):
            index.memo[(kind, items[i])] = n
    for i, item in enumerate(items):
        out[i] = index.memo[(kind, item)]
    return out + _framing(counter, positional)


@lru_cache(maxsize=64)
def _framing(counter: TokenCounter, positional: str) -> int:
    """Tokens a ``"<positional>": n`` field adds to a line."""
    return counter.count_one(_line({positional: 1, "x": ""})) - counter.count_one(_line({"x": ""}))


def interleave(*routes: np.ndarray) -> np.ndarray:
    """Round-robin over the routes, first occurrence of each id kept."""
    out: dict[int, None] = {}
    longest = max((len(r) for r in routes), default=0)
    for i in range(longest):
        for route in routes:
            if i < len(route):
                out.setdefault(int(route[i]), None)
    return np.fromiter(out, dtype=np.int64, count=len(out))


def _section(title: str, rows: list[dict]) -> str:
    body = "\n".join(_line(r) for r in rows)
    return f"{title}\n\n```json\n{body}\n```\n"


def build_context(
    index: ModeIndex, hits: SearchHits, param: QueryParam, fixed_tokens: int = 0,
    counter: TokenCounter | None = None,
) -> QueryContext:
    counter = counter or TokenCounter.default()
    entity_items = [int(e) for e in _candidates(hits.entities, param.max_entity_tokens)]
    entity_rows = [
        {"id": i + 1, "entity": str(index.entity_names[e]), "type": index.type_names[index.entity_types[e]],
         "description": index.entity_description(e), "instance_id": str(index.entity_ids[e])}
        for i, e in enumerate(entity_items)
    ]
    entities, entity_tokens = truncate(
        entity_rows, param.max_entity_tokens, row_tokens(index, "entity", entity_items, entity_rows, counter, "id")
    )
    edge_items = [int(e) for e in _candidates(hits.edges, param.max_relation_tokens)]
    relation_rows = [{"id": i + 1, **index.relation_row(e)} for i, e in enumerate(edge_items)]
    relations, relation_tokens = truncate(
        relation_rows, param.max_relation_tokens, row_tokens(index, "edge", edge_items, relation_rows, counter, "id")
    )
    chunk_budget = param.max_total_tokens - fixed_tokens - entity_tokens - relation_tokens
    merged = interleave(hits.entity_chunks, hits.vector_chunks)
    order = _candidates(merged, chunk_budget)
    references: dict[int, int] = {}  # source entity row (or -1 - chunk) -> reference id
    chunk_rows = []
    for c in order:
        doc = int(index.chunk_docs[c])
        ref = references.setdefault(doc if doc >= 0 else -1 - int(c), len(references) + 1)
        chunk_rows.append({"reference_id": ref, "chunk_id": str(index.chunk_ids[c]),
                           "section": str(index.chunk_sections[c]), "content": str(index.chunk_texts[c])})
    # a chunk's line is {"reference_id": n, "content": text}: its stored token count plus that framing
    framing = _framing(counter, "reference_id") + counter.count_one(_line({"content": ""}))
    chunks, chunk_tokens = truncate(chunk_rows, chunk_budget, index.chunk_tokens[order] + framing)
    used = {r["reference_id"] for r in chunks}
    reference_list = []
    for key, ref in references.items():
        if ref in used:
            name = str(index.entity_names[key]) if key >= 0 else "(unknown source)"
            instance = str(index.entity_ids[key]) if key >= 0 else ""
            reference_list.append({"reference_id": ref, "title": name, "instance_id": instance})
    # references renumbered 1..n in order of first use, so the list has no gaps
    renumber = {r["reference_id"]: i + 1 for i, r in enumerate(reference_list)}
    for r in reference_list:
        r["reference_id"] = renumber[r["reference_id"]]
    for c in chunks:
        c["reference_id"] = renumber[c["reference_id"]]
    parts = [
        _section("Knowledge Graph Data (Entity):", entities),
        _section("Knowledge Graph Data (Relationship):", relations),
        _section("Document Chunks (each entry has a reference_id that refers to the Reference Document List):",
                 [{"reference_id": c["reference_id"], "content": c["content"]} for c in chunks]),
        "Reference Document List (each entry starts with the [reference_id] its chunks carry):\n\n"
        + "\n".join(f"[{r['reference_id']}] {r['title']}" for r in reference_list) + "\n",
    ]
    return QueryContext(
        text="\n".join(parts),
        entities=entities,
        relations=relations,
        chunks=chunks,
        references=reference_list,
        tokens={"entities": entity_tokens, "relations": relation_tokens, "chunks": chunk_tokens,
                "chunk_budget": max(chunk_budget, 0)},
        dropped={"entities": len(hits.entities) - len(entities), "relations": len(hits.edges) - len(relations),
                 "chunks": len(merged) - len(chunks)},
    )

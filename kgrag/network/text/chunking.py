"""Split long instance texts into retrievable chunks with stable ids (the query modes' chunk store).

    chunks = chunk_instances(instances, TextConfig(sections={"Disease": ["desc", "cause"]}), TokenCounter.default())

A section's text is cut into sentences (。！？；!?; and newlines, the delimiter kept), packed greedily up to
``chunk_tokens`` tokens; the next chunk starts with the last sentences of the previous one up to
``overlap_tokens`` tokens. A sentence longer than a chunk is cut at token boundaries. A chunk's id is
``chunk-`` + the first 16 hex digits of sha1(instance id, section, position, text), so reloading the same data
gives the same ids; its ``source_ids`` name the instance it describes. The token counts of all sentences of
all instances are taken in a few large batch calls (each distinct sentence once).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from kgrag.network.schema.model import Instance, TextConfig
from kgrag.rank.token_count import TokenCounter

__all__ = ["Chunk", "chunk_instances", "chunk_text", "chunk_id"]

_SENTENCE = re.compile(r"[^。！？；!?;\n]*(?:[。！？；!?;]+|\n+|$)")


@dataclass(frozen=True)
class Chunk:
    id: str
    doc_id: str  # the instance the section belongs to
    object_type_id: str
    section: str  # the property the text came from
    position: int  # order within the section
    text: str
    tokens: int
    source_ids: list[str] = field(default_factory=list)


def chunk_id(doc_id: str, section: str, position: int, text: str) -> str:
    digest = hashlib.sha1(f"{doc_id}\0{section}\0{position}\0{text}".encode()).hexdigest()
    return f"chunk-{digest[:16]}"


def _sentences(text: str) -> list[str]:
    return [s for s in _SENTENCE.findall(text) if s.strip()]


def chunk_text(text: str, counter: TokenCounter, chunk_tokens: int, overlap_tokens: int) -> list[tuple[str, int]]:
    """``(chunk text, token count)`` pairs covering ``text`` (see the module docstring)."""
    text = text.strip()
    if not text:
        return []
    sentences = _sentences(text)
    return _pack(sentences, counter.count(sentences).tolist(), counter, chunk_tokens, overlap_tokens)


def _pack(sentences: list[str], counts: list[int], counter: TokenCounter, chunk_tokens: int,
          overlap_tokens: int) -> list[tuple[str, int]]:
    """:func:`chunk_text` of a text cut into ``sentences`` whose token counts are ``counts``."""
    pieces: list[tuple[str, int]] = []
    for sentence, n in zip(sentences, counts, strict=True):
        if n <= chunk_tokens:
            pieces.append((sentence, n))
            continue
        spans = counter.offsets(sentence)  # a long sentence: cut at token boundaries
        for start in range(0, len(spans), chunk_tokens):
            window = spans[start : start + chunk_tokens]
            end = spans[start + chunk_tokens][0] if start + chunk_tokens < len(spans) else len(sentence)
            pieces.append((sentence[window[0][0] : end], len(window)))
    chunks: list[tuple[str, int]] = []
    current: list[tuple[str, int]] = []
    size = 0
    for piece in pieces:
        if current and size + piece[1] > chunk_tokens:
            chunks.append(("".join(p[0] for p in current).strip(), size))
            carry: list[tuple[str, int]] = []
            carried = 0
            for prev in reversed(current):  # the tail of the previous chunk, up to the overlap
                if carried + prev[1] > overlap_tokens or carried + prev[1] + piece[1] > chunk_tokens:
                    break
                carry.insert(0, prev)
                carried += prev[1]
            current, size = carry, carried
        current.append(piece)
        size += piece[1]
    if current:
        chunks.append(("".join(p[0] for p in current).strip(), size))
    return [(c, n) for c, n in chunks if c]


def _section_text(value: object) -> str:
    if isinstance(value, list | tuple):
        return "\n".join(str(v) for v in value if v)
    return str(value) if value else ""


#: sentences counted per batch call
COUNT_BATCH = 50_000


def chunk_instances(instances: Iterable[Instance], config: TextConfig, counter: TokenCounter) -> list[Chunk]:
    """Every chunk of the configured sections of ``instances``, in instance then section order (the same chunks
    as :func:`chunk_text` of each section, with the sentences counted in batches)."""
    sections: list[tuple[Instance, str, list[str]]] = []
    for inst in instances:
        for section in config.sections.get(inst.object_type_id, ()):
            text = _section_text(inst.properties.get(section)).strip()
            if text:
                sections.append((inst, section, _sentences(text)))
    distinct = list(dict.fromkeys(s for _inst, _section, sentences in sections for s in sentences))
    counts: dict[str, int] = {}
    for start in range(0, len(distinct), COUNT_BATCH):
        batch = distinct[start : start + COUNT_BATCH]
        counts.update(zip(batch, counter.count(batch).tolist(), strict=True))
    out: list[Chunk] = []
    for inst, section, sentences in sections:
        pieces = _pack(sentences, [counts[s] for s in sentences], counter, config.chunk_tokens,
                       config.overlap_tokens)
        for position, (piece, tokens) in enumerate(pieces):
            out.append(Chunk(chunk_id(inst.id, section, position, piece), inst.id, inst.object_type_id,
                             section, position, piece, tokens, [inst.id]))
    return out

"""The LLM answering step of the GFlowNet reasoner: verbalise the evidence paths, let the LLM name the answers.

    paths = [PathEvidence((("Kill Bill", "directed_by", "Quentin Tarantino"),), "Quentin Tarantino", 0.8)]
    names = llm_answers(client, "Who directed Kill Bill?", paths)  # ["Quentin Tarantino"]
    answer_correct(names, gold_names)  # the exact-match (Hits@1-style) check
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel

from kgrag.llm.client import ChatClient
from kgrag.llm.json_output import chat_json
from kgrag.llm.prompts import load_prompt
from kgrag.text import answer_key

__all__ = ["PathEvidence", "PathAnswer", "verbalise_path", "build_messages", "llm_answers", "normalise_name",
           "answer_correct"]

@dataclass(frozen=True)
class PathEvidence:
    """One evidence path: its triples as stored in the KG (walk order), where it ends, and its probability."""

    triples: tuple[tuple[str, str, str], ...]  # (head name, relation, tail name)
    terminal: str  # name of the entity the path ends at (its candidate answer)
    probability: float  # the policy's probability of the path


class PathAnswer(BaseModel):
    """The LLM's reply: the answer entity names, as written in the paths."""

    answers: list[str]


def _start(path: PathEvidence) -> str:
    """Where the walk starts: the first triple's end not shared with the second (one triple: not ``terminal``)."""
    head, _, tail = path.triples[0]
    if len(path.triples) == 1:
        return tail if head == path.terminal and tail != path.terminal else head
    nxt = path.triples[1]
    return tail if head in (nxt[0], nxt[2]) and tail not in (nxt[0], nxt[2]) else head


def verbalise_path(path: PathEvidence) -> str:
    """``A -[r]-> B <-[s]- C``: each triple reads in walk order, ``<-[s]-`` for one walked against its direction.

    Raises ``ValueError`` for an empty path or one whose triples do not chain.
    """
    if not path.triples:
        raise ValueError("an evidence path needs at least one triple")
    current = _start(path)
    parts = [current]
    for head, relation, tail in path.triples:
        if current == head:
            parts.append(f"-[{relation}]-> {tail}")
            current = tail
        elif current == tail:
            parts.append(f"<-[{relation}]- {head}")
            current = head
        else:
            raise ValueError(f"triple {(head, relation, tail)!r} does not continue the path at {current!r}")
    return " ".join(parts)


def build_messages(question: str, paths: Sequence[PathEvidence], max_paths: int = 10) -> list[dict]:
    """The chat messages asking the LLM to answer from the ``max_paths`` most probable paths, numbered."""
    best = sorted(paths, key=lambda p: p.probability, reverse=True)[:max_paths]
    listing = "\n".join(f"{i}. {verbalise_path(p)}" for i, p in enumerate(best, start=1))
    return [{"role": "user", "content": load_prompt("path_answer").format(question=question, paths=listing)}]


def llm_answers(client: ChatClient, question: str, paths: Sequence[PathEvidence], max_paths: int = 10) -> list[str]:
    """The answer names the LLM reads off the paths (stripped, deduplicated, in its order); [] without paths.

    Raises :class:`~kgrag.errors.LLMError` when the endpoint fails or never replies with valid JSON.
    """
    if not paths:
        return []
    reply = chat_json(client, build_messages(question, paths, max_paths), PathAnswer)
    names = (name.strip() for name in reply.answers)
    return list(dict.fromkeys(name for name in names if name))


#: an answer name as compared: casefolded, Unicode-NFKC, whitespace collapsed, surrounding quotes and punctuation
#: dropped (:func:`kgrag.text.answer_key`)
normalise_name = answer_key


def answer_correct(predicted: Sequence[str], gold: Sequence[str]) -> bool:
    """Exact match: some predicted name equals some gold name after :func:`normalise_name`."""
    targets = {normalise_name(g) for g in gold} - {""}
    return any(normalise_name(p) in targets for p in predicted)

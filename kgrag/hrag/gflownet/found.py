"""A path the answer search found: what the beam (:mod:`~kgrag.hrag.gflownet.answers`) and the chain search
(:mod:`~kgrag.hrag.gflownet.chain_search`) return as evidence.

    FoundPath(question=0, candidates=[4, 9], terminal=7, probability=0.8)   # walk: candidate 4, then 9
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["FoundPath"]


@dataclass
class FoundPath:
    question: int  # row in the batch
    candidates: list[int]  # oriented candidates in walk order (2e = edge e as stored, 2e + 1 reversed)
    terminal: int  # local node the path ends at
    probability: float

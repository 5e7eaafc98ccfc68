"""One interface for SPARQL 1.1 SELECT over a triple graph, whatever answers it.

Two backends implement :class:`GraphStore`: :class:`~kgrag.graph.oxigraph_store.OxigraphStore` (embedded,
persistent directory) and :class:`~kgrag.graph.remote_store.RemoteStore` (any endpoint over HTTP via
SPARQLWrapper). Both return rows as ``{variable: Term}`` so callers never see backend types.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Literal

TermKind = Literal["uri", "literal", "bnode"]


@dataclass(frozen=True, slots=True)
class Term:
    """An RDF term in a result row."""

    kind: TermKind
    value: str
    lang: str | None = None
    datatype: str | None = None


Row = dict[str, Term]


class GraphStore(ABC):
    """A read interface to a SPARQL 1.1 store. Use as a context manager or call :meth:`close`."""

    #: human-readable backend description (path or URL)
    location: str

    @abstractmethod
    def select(self, query: str, timeout: float | None = None) -> list[Row]:
        """Run a SELECT query; unbound variables are absent from a row."""

    @abstractmethod
    def ask(self, query: str, timeout: float | None = None) -> bool:
        """Run an ASK query."""

    @abstractmethod
    def count_triples(self) -> int:
        """Number of RDF triples in the store (a health check and a load check)."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release the backend's resources."""

    def __enter__(self) -> GraphStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

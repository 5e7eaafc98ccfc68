"""What kn_search needs from a knowledge-network backend (the spec's Ontology Manager + Ontology Query roles)."""

from __future__ import annotations

from typing import Protocol

from kgrag.network.model import Condition, InstanceHit, KnowledgeNetwork


class NetworkNotFound(LookupError):
    """No knowledge network with that ``kn_id``."""


class OntologyService(Protocol):
    def list_networks(self) -> list[tuple[str, str]]:
        """``(kn_id, name)`` of every loaded network."""

    def get_network(self, kn_id: str) -> KnowledgeNetwork:
        """Full schema (object, relation and action types); raises :class:`NetworkNotFound`."""

    def search_object_types(self, kn_id: str, query: str, limit: int) -> list[tuple[str, float]]:
        """``knn(*, query) OR match(*, query)`` over object types: ``(id, score)`` by score desc."""

    def search_relation_types(self, kn_id: str, query: str, limit: int) -> list[tuple[str, float]]:
        """Same over relation types."""

    def query_instances(self, kn_id: str, object_type_id: str, condition: Condition | None, limit: int,
                        sort_by_score: bool = True) -> list[InstanceHit]:
        """Instances of one object type matching ``condition`` (scored by knn/match when present)."""

    def sample_instance(self, kn_id: str, object_type_id: str) -> dict | None:
        """One instance's properties (for ``include_sample_data``), or None when the type has none."""

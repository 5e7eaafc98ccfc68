"""What the search stages need from a knowledge-network backend, as typing protocols (the spec's Ontology Manager
+ Ontology Query roles). :class:`kgrag.network.store.NetworkStore` implements both.

- :class:`OntologyService`: concept and semantic instance recall (:mod:`kgrag.search.recall`).
- :class:`ContextStore`: contextual recall (:mod:`kgrag.search.contextual` and its stage modules).
"""

from __future__ import annotations

from typing import Protocol

from kgrag.network.schema.model import Condition, InstanceHit, KnowledgeNetwork, PathHit


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


class ContextStore(Protocol):
    def network_version(self, kn_id: str) -> str:
        """The version of ``kn_id``'s last load (caches are kept per version); raises :class:`NetworkNotFound`."""

    def get_network(self, kn_id: str) -> KnowledgeNetwork:
        """Full schema (object, relation and action types); raises :class:`NetworkNotFound`."""

    def instance_names(self, kn_id: str) -> list[tuple[str, str, str]]:
        """``(object_type_id, instance id, name)`` of every instance: the keyword dictionary."""

    def query_instances(self, kn_id: str, object_type_id: str, condition: Condition | None, limit: int,
                        sort_by_score: bool = True) -> list[InstanceHit]:
        """Instances of one object type matching ``condition`` (scored by knn/match when present)."""

    def query_path(self, kn_id: str, source_type: str, source_condition: Condition | None, relation_type_id: str,
                   target_type: str, target_condition: Condition | None,
                   limit_per_type: int = 10) -> list[PathHit]:
        """Instances connected by one relation, each end satisfying its condition (``None`` = any)."""

    def link_cardinality(self, kn_id: str, relation_type_id: str) -> tuple[int, int, int]:
        """``(most targets of one source, most sources of one target, links)`` of one relation type."""

"""What the search stages need from a knowledge-network backend, as typing protocols (the spec's Ontology Manager
+ Ontology Query roles). :class:`kgrag.network.store.NetworkStore` implements both.

    service: OntologyService = NetworkStore("sqlite:///work/kgrag.db"); service.list_networks()

- :class:`OntologyService`: concept and semantic instance recall (:mod:`kgrag.search.recall`).
- :class:`ContextStore`: contextual recall (:mod:`kgrag.search.contextual` and its stage modules).

The batched reads are part of the contract, not optional extras: search calls them on every store, and each
returns exactly what its one-at-a-time counterpart returns per item (:meth:`ContextStore.query_instances_by_type`
= :meth:`~ContextStore.query_instances` per type, :meth:`ContextStore.match_scores_many` = ``match_scores`` per
request, :meth:`OntologyService.prefetched_matches` = the same ``match`` scores read once).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from contextlib import AbstractContextManager
from typing import Protocol, TypeVar

from kgrag.network.schema.model import Condition, InstanceHit, KnowledgeNetwork, PathHit

#: the caller's key of one request of :meth:`ContextStore.match_scores_many`
Key = TypeVar("Key", bound=Hashable)


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
                        sort_by_score: bool = True, scored_limit: int | None = None) -> list[InstanceHit]:
        """Instances of one object type matching ``condition`` (scored by knn/match when present); with
        ``scored_limit``, only the best ``scored_limit`` of the scored hits (the unscored ones after them as
        without it: ``limit`` still decides how many)."""

    def ordered_instances(self, kn_id: str, object_type_id: str, condition: Condition | None, order_by: str,
                          descending: bool, limit: int) -> list[InstanceHit]:
        """The first ``limit`` instances matching ``condition`` by ``order_by``'s typed value (a number as a number,
        a date by its ISO text; no value last; ties by id); ``ValueError`` for an unknown or unordered property."""

    def count_matching(self, kn_id: str, object_type_id: str, condition: Condition | None) -> int:
        """How many instances of one object type match ``condition`` (None: all of them)."""

    def prefetched_matches(self, kn_id: str, kind: str, requests: list[tuple[str, list[str]]], query: str,
                           limit: int, knn: Sequence[tuple[str, list[str], int]] = ()
                           ) -> AbstractContextManager[None]:
        """A block (this thread or task) in which the ``match`` scores of every ``(type id, fields)`` of
        ``requests`` for ``query`` and ``limit`` — what a ``match`` leaf of :meth:`query_instances` on that type
        and those fields reads — come from one read made on entry, with the same scores, and the ``knn`` scores
        of every ``(type id, fields, limit)`` of ``knn`` may come from searches made on entry (at once: a store
        searches its big types' ANN indexes side by side); every other read runs as usual. Semantic instance
        recall reads all its types' ``match`` and ``knn`` leaves this way."""

    def vectors_pending(self, kn_id: str) -> dict[str, int] | None:
        """``{"done": n, "total": n}`` while ``kn_id``'s instance vectors are deferred and not all made (``knn``
        over its instances then answers nothing), else None."""

    def warm_vector_indexes(self, kn_id: str) -> int:
        """Load the instance vector index of every object type of ``kn_id`` (what a first ``knn`` read would
        load); returns the number of vectors now in memory. Raises :class:`NetworkNotFound`."""

    def warm_list_members(self, kn_id: str) -> int:
        """Build the item index of every list property of ``kn_id`` (what the first ``contain`` on each field
        builds); returns the number of fields indexed. Raises :class:`NetworkNotFound`."""

    def sample_instance(self, kn_id: str, object_type_id: str) -> dict | None:
        """One instance's properties (for ``include_sample_data``), or None when the type has none."""


class ContextStore(Protocol):
    @property
    def concurrent_reads(self) -> bool:
        """Whether independent reads gain from running on threads (a database server: yes; an in-process
        database such as SQLite: no)."""

    def network_version(self, kn_id: str) -> str:
        """The version of ``kn_id``'s last load (caches are kept per version); raises :class:`NetworkNotFound`."""

    def get_network(self, kn_id: str) -> KnowledgeNetwork:
        """Full schema (object, relation and action types); raises :class:`NetworkNotFound`."""

    def instance_names(self, kn_id: str) -> list[tuple[str, str, str]]:
        """``(object_type_id, instance id, name)`` of every instance: the keyword dictionary."""

    def query_instances(self, kn_id: str, object_type_id: str, condition: Condition | None, limit: int,
                        sort_by_score: bool = True, scored_limit: int | None = None) -> list[InstanceHit]:
        """Instances of one object type matching ``condition`` (scored by knn/match when present); see
        :meth:`OntologyService.query_instances` for ``scored_limit``."""

    def query_instances_by_type(self, kn_id: str, conditions: dict[str, Condition], limit: int
                                ) -> dict[str, list[InstanceHit]]:
        """``{type id: hits}`` for every ``{type id: condition}``: each type's hits equal
        ``query_instances(kn_id, type id, condition, limit, sort_by_score=False)`` (the first ``limit``
        matching instances by id, unscored); meant for leaf conditions without ``match`` / ``knn``, which many
        types answer in one statement. Unknown types or fields raise ``ValueError``."""

    def scored_instances_by_type(self, kn_id: str, scores: dict[str, dict[str, float]], limit: int
                                 ) -> dict[str, list[InstanceHit]]:
        """``{type id: hits}`` for scores ``{type id: {instance id: score}}`` (from :meth:`match_scores_many`
        or :meth:`knn_scores`): each type's best ``limit`` instances by (score desc, id), carrying their score —
        what :meth:`query_instances` returns for a lone ``match`` / ``knn`` leaf with those scores. Ids not
        stored are skipped."""

    def match_scores_many(self, kn_id: str, kind: str, requests: dict[Key, tuple[str, list[str]]], query: str,
                          limit: int) -> dict[Key, dict[str, float]]:
        """``{key: {item id: score}}`` for every ``{key: (type id, fields)}``: the full-text (``match``) scores of
        ``query`` over those fields of items of ``kind`` (``"instance"``: the type's instances), in (0, 1], at
        most ``limit`` items, best first — each equal to a ``match`` leaf's scores on that type alone."""

    def knn_scores(self, kn_id: str, kind: str, type_id: str, fields: list[str] | None, query: str, limit: int,
                   version: str | None = None) -> dict[str, float]:
        """``{item id: cosine}``: the ``limit`` items of ``kind`` / ``type_id`` whose vectors of ``fields`` (None:
        any field) are nearest to ``query``'s, cosine clipped to [0, 1], best first — a ``knn`` leaf's scores;
        ``{}`` when the query cannot be embedded or the type has no vectors. ``version``: the network version
        the caller already read (None: read it)."""

    def query_path(self, kn_id: str, source_type: str, source_condition: Condition | None, relation_type_id: str,
                   target_type: str, target_condition: Condition | None,
                   limit_per_type: int = 10) -> list[PathHit]:
        """Instances connected by one relation, each end satisfying its condition (``None`` = any)."""

    def link_cardinality(self, kn_id: str, relation_type_id: str) -> tuple[int, int, int]:
        """``(most targets of one source, most sources of one target, links)`` of one relation type."""

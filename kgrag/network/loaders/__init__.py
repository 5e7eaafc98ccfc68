"""Loaders: each builds ``(KnowledgeNetwork, instances, links)`` for :meth:`NetworkStore.load`."""

from __future__ import annotations

from kgrag.network.model import Instance, KnowledgeNetwork, Link

#: what every loader returns
NetworkData = tuple[KnowledgeNetwork, list[Instance], list[Link]]

__all__ = ["NetworkData"]

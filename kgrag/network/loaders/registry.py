"""Named networks: ``load_named(name, store, data_dir)`` builds and loads ``medical|metaqa|demo|synthetic``
(kn_id = the name). ``build_named`` only builds ``(network, instances, links)``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from kgrag.errors import KgragError
from kgrag.network.loaders import NetworkData

if TYPE_CHECKING:  # pragma: no cover
    from kgrag.network.store import LoadStats, NetworkStore

__all__ = ["NAMED_NETWORKS", "build_named", "load_named"]

NAMED_NETWORKS = ("medical", "metaqa", "demo", "synthetic")


def build_named(name: str, data_dir: str | Path | None = None) -> NetworkData:
    """The network data for ``name`` (reads ``data_dir``, default ``Settings.data_dir``, for medical/metaqa)."""
    if data_dir is None:
        from kgrag.config import get_settings

        data_dir = get_settings().data_dir
    if name == "medical":
        from kgrag.network.loaders.medical import load_medical

        return load_medical(data_dir, kn_id=name)
    if name == "metaqa":
        from kgrag.network.loaders.metaqa import load_metaqa

        return load_metaqa(data_dir, kn_id=name)
    if name == "demo":
        from kgrag.network.loaders.demo import demo_network

        return demo_network(kn_id=name)
    if name == "synthetic":
        from kgrag.network.loaders.synthetic import synthetic_network

        return synthetic_network(kn_id=name)
    raise KgragError(f"unknown network {name!r}; choose one of {', '.join(NAMED_NETWORKS)}")


def load_named(name: str, store: NetworkStore, data_dir: str | Path | None = None,
               log: Callable[[str], None] | None = None) -> LoadStats:
    """Build network ``name`` and load it into ``store`` (idempotent: replaces any earlier load), with Chinese
    vectors for a Chinese network (:func:`kgrag.network.embedding.network_embedder`). Each text is segmented
    once for the vectors' training, the text index and the vectors (:func:`kgrag.rank.tokenize.tokenize_cache`)."""
    from kgrag.config import get_settings
    from kgrag.network.embedding import network_embedder
    from kgrag.rank.tokenize import tokenize_cache

    network, instances, links = build_named(name, data_dir)
    with tokenize_cache():
        embedder = network_embedder(network, instances, get_settings(), log=log)
        return store.load(network, instances, links, embedder=embedder)

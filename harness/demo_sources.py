"""The demo network and the demo KG in one settings' database and work dir (the MCP tests' data).

    load_demo_sources(settings)   # the network ``demo`` loaded, the KG ``demo`` prepared (graph + store)
"""

from __future__ import annotations

from kgrag.config import Settings
from kgrag.network.loaders.demo import demo_network
from kgrag.network.store import NetworkStore
from kgrag.prep import steps

__all__ = ["load_demo_sources"]


def load_demo_sources(settings: Settings) -> None:
    store = NetworkStore(settings.db_url)
    try:
        store.load(*demo_network())
    finally:
        store.close()
    fingerprint = steps.input_fingerprint("demo", settings.data_dir)
    steps.build_graph("demo", settings.data_dir, settings.dataset_dir("demo"), fingerprint)
    steps.load_store(settings.dataset_dir("demo"), fingerprint)

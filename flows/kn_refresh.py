"""Knowledge-network refresh: load the network into the store when it is missing (a first load of a Chinese network
trains its domain vectors), then train the medical intent ranker (reused when its config and data are unchanged).

Run: ``python -m flows.kn_refresh --kn-id medical`` (the demo network needs no data).
"""

from __future__ import annotations

import argparse
import json

from prefect import flow, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from flows.artifact_keys import artifact_key
from flows.train_intent import train_intent
from kgrag.config import get_settings
from kgrag.network.store import NetworkStore
from kgrag.run_parts import ensure_network


@task(name="load-network", cache_policy=NO_CACHE)
def load_network(kn_id: str) -> dict:
    settings = get_settings()
    store = NetworkStore(settings.db_url)
    try:
        loaded = ensure_network(store, kn_id, settings.data_dir)
        return {"kn_id": kn_id, "loaded_now": loaded, "instances": store.count_instances(kn_id),
                "links": store.count_links(kn_id)}
    finally:
        store.close()


@flow(name="kn-refresh", log_prints=True)
def kn_refresh(kn_id: str = "medical") -> dict:
    """The network in the store, then (medical) the intent ranker."""
    network = load_network(kn_id)
    intent = None
    if kn_id == "medical":
        result = train_intent()
        intent = {"accuracy@1": result["validation"]["accuracy@1"], "n": result["validation"]["n"]}
    create_markdown_artifact(key=artifact_key("kn-refresh", kn_id), description=f"Knowledge network {kn_id}",
                             markdown=f"# Knowledge network {kn_id}\n\n```json\n"
                                      f"{json.dumps({'network': network, 'intent': intent}, indent=1)}\n```\n")
    return {"network": network, "intent": intent}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Load a knowledge network when missing; train its intent ranker.")
    parser.add_argument("--kn-id", default="medical")
    args = parser.parse_args(argv)
    print(json.dumps(kn_refresh(kn_id=args.kn_id), default=str))


if __name__ == "__main__":
    from flows import run_main

    run_main(main)

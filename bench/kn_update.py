"""Fresh data on the medical network (issue 45 §5): a 1 % mixed change applied by ``sync`` against a full load, and
how soon a running ``kgrag serve`` answers from it.

    python -m bench.kn_update [--fraction 0.01] [--seed 7] [--workers 2]

In one run, on a fresh SQLite file under ``<KGRAG_WORK_DIR>/bench-kn-update`` (the medical network read from
``KGRAG_DATA_DIR``, its domain vectors from ``<KGRAG_WORK_DIR>/models/embeddings/medical`` — trained there first if
absent, which takes minutes and is not timed):

1. **baseline** — a full load of the network (``NetworkStore.load``: validation, tokens, vectors through the
   embedding cache, one transaction), what ``kgrag kn load --full`` does after building the data;
2. a **no-op sync** of the same data (what ``kgrag kn load`` costs when nothing changed: hashing and diffing);
3. ``kgrag serve --workers N`` starts on the database; a deleted and an inserted disease are asked for by name
   (``kn_search`` and the agent's ``/agent/ask``) and the answers checked against the old state;
4. the **1 % change** (``--fraction`` of the instances, a third each deleted, updated — a property changed — and
   inserted — a copy of a random instance of the same type under a new name, with the copy's links; a deleted
   instance's links go with it), generated from the data with ``--seed``, applied by ``NetworkStore.sync``: its
   wall time, and its ratio to the full load (target ≤ 0.05);
5. the served answers polled until both name lookups reflect the change on ``--confirm`` consecutive requests
   (one request at a time, the four probes in turn, the workers answering as the kernel spreads them): seconds
   from the sync's commit until each probe's first right answer (``reflect_first_s``: the last of those; target
   ≤ 2 s, no restart) and until every probe was right ``--confirm`` rounds in a row; also the first
   ``/api/query`` (query modes, local) after it, whose
   in-memory index of the old version (built before the change) is moved forward, not rebuilt.

Writes ``bench/results/kn_update.json``.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import write_result


def progress(message: str) -> None:
    print(f"[bench.kn_update] {message}", flush=True)


def make_change(instances: list, links: list, fraction: float, seed: int) -> tuple[list, list, dict[str, Any]]:
    """The desired state after a ``fraction`` mixed change (see the module docstring) and what it did."""
    from kgrag.network.schema.model import Instance, Link

    rng = random.Random(seed)
    k = max(3, round(len(instances) * fraction)) // 3
    picked = rng.sample(range(len(instances)), 2 * k)
    deleted = {(instances[i].object_type_id, instances[i].id) for i in picked[:k]}
    updated = {(instances[i].object_type_id, instances[i].id) for i in picked[k:]}
    names = {i.properties.get("name") for i in instances}
    out: list[Instance] = []
    for inst in instances:
        key = (inst.object_type_id, inst.id)
        if key in deleted:
            continue
        if key in updated:
            props = dict(inst.properties)
            field = next((p for p, v in props.items() if isinstance(v, str) and p != "name"), "name")
            props[field] = f"{props.get(field, '')}（{seed}修订）"
            inst = Instance(object_type_id=inst.object_type_id, id=inst.id, properties=props)
        out.append(inst)
    survivors = [i for i in out if (i.object_type_id, i.id) not in updated]
    links_of: dict[str, list] = {}
    for link in links:
        links_of.setdefault(link.source_id, []).append(link)
    gone = {i for _, i in deleted}
    kept_links = [lk for lk in links if lk.source_id not in gone and lk.target_id not in gone]
    inserted: list[Instance] = []
    for n in range(k):
        model = rng.choice(survivors)
        name = f"{model.properties.get('name', model.id)}新亚型{n}"
        while name in names:
            name += "甲"
        names.add(name)
        new = Instance(object_type_id=model.object_type_id, id=f"{model.id}#new{seed}-{n}",
                       properties={**model.properties, "name": name})
        inserted.append(new)
        kept_links += [Link(relation_type_id=lk.relation_type_id, source_id=new.id, target_id=lk.target_id)
                       for lk in links_of.get(model.id, []) if lk.target_id not in gone]
    return out + inserted, kept_links, {"deleted": sorted(deleted), "updated": sorted(updated),
                                        "inserted": [(i.object_type_id, i.id, i.properties["name"])
                                                     for i in inserted]}


def _probes(instances: list, what: dict[str, Any]) -> tuple[tuple[str, str], tuple[str, str]]:
    """``((deleted disease id, its name), (inserted disease id, its name))``: names held by one instance only."""
    counts: dict[str, int] = {}
    for inst in instances:
        counts[str(inst.properties.get("name"))] = counts.get(str(inst.properties.get("name")), 0) + 1
    by_key = {(i.object_type_id, i.id): i for i in instances}
    deleted = next((i, by_key[(t, i)].properties["name"]) for t, i in what["deleted"]
                   if t == "Disease" and counts.get(by_key[(t, i)].properties["name"]) == 1
                   and len(by_key[(t, i)].properties["name"]) >= 3)
    inserted = next((i, name) for t, i, name in what["inserted"] if t == "Disease")
    return deleted, inserted


def _names_found(client: Any, url: str, name: str) -> set[str]:
    body = {"query": name, "kn_id": "medical"}
    reply = client.post(f"{url}/api/agent-retrieval/in/v1/kn/kn_search", json=body, timeout=60)
    reply.raise_for_status()
    return {n["instance_name"] for n in reply.json()["nodes"]}


def _topic(client: Any, url: str, name: str) -> str:
    body = {"question": f"{name}有哪些症状", "kn_id": "medical"}
    reply = client.post(f"{url}/agent/ask", json=body, timeout=120)
    reply.raise_for_status()
    return str((reply.json().get("topic") or {}).get("name", ""))


def _reflects(client: Any, url: str, deleted: str, inserted: str) -> dict[str, bool]:
    return {"kn_search_deleted_gone": deleted not in _names_found(client, url, deleted),
            "kn_search_inserted_found": inserted in _names_found(client, url, inserted),
            "agent_deleted_gone": _topic(client, url, deleted) != deleted,
            "agent_inserted_found": _topic(client, url, inserted) == inserted}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fraction", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--confirm", type=int, default=3, help="rounds of right answers in a row that confirm it")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ["KGRAG_LLM_BASE_URL"] = ""

    import httpx

    from harness.servers.ports import free_port
    from harness.servers.process import server_process
    from kgrag.config import get_settings
    from kgrag.network.loaders.registry import build_named
    from kgrag.network.store import NetworkStore
    from kgrag.network.text.embedding import network_embedder
    from kgrag.rank.tokenize import tokenize_cache

    settings = get_settings()
    folder = settings.work_dir / "bench-kn-update"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    db = f"sqlite:///{folder / 'kn.db'}"
    store = NetworkStore(db)

    start = time.perf_counter()
    network, instances, links = build_named("medical")
    build_s = time.perf_counter() - start
    embedder = network_embedder(network, instances, settings, log=progress)
    progress(f"built the medical network in {build_s:.1f} s: {len(instances):,} instances, {len(links):,} links")
    with tokenize_cache():
        start = time.perf_counter()
        loaded = store.load(network, instances, links, embedder=embedder)
        full_s = time.perf_counter() - start
    progress(f"full load: {full_s:.1f} s")
    start = time.perf_counter()
    noop = store.sync(network, instances, links, embedder=embedder)
    noop_s = time.perf_counter() - start
    assert not noop.changed and noop.version == loaded.version, noop
    progress(f"no-op sync: {noop_s:.2f} s")

    new_instances, new_links, what = make_change(instances, links, args.fraction, args.seed)
    (deleted_id, deleted), (inserted_id, inserted) = _probes(instances, what)
    progress(f"probes: deleted {deleted} ({deleted_id}), inserted {inserted} ({inserted_id})")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "KGRAG_DATABASE_URL": db, "PYTHONPATH": os.pathsep.join(sys.path)}
    command = [str(Path(sys.executable).with_name("kgrag")), "serve", "--host", "127.0.0.1", "--port", str(port),
               "--workers", str(args.workers), "--no-warm"]
    served: dict[str, Any] = {}
    with server_process(command, env, folder / "serve.log", f"{url}/healthz", "kgrag serve", 300), \
            httpx.Client() as client:
        modes_body = {"query": inserted, "kn_id": "medical", "param": {"mode": "local", "only_need_context": True}}
        for _ in range(2 * args.workers):  # each worker's query-modes index of the old version built
            client.post(f"{url}/api/query", json=modes_body, timeout=300).raise_for_status()
        before = [_reflects(client, url, deleted, inserted) for _ in range(2 * args.workers)]  # every worker warm
        assert not any(b["kn_search_deleted_gone"] or b["kn_search_inserted_found"] for b in before), before
        progress(f"served answers before the change: {before[-1]}")
        start = time.perf_counter()
        stats = store.sync(network, new_instances, new_links, embedder=embedder)
        committed = time.perf_counter()
        sync_s = committed - start
        progress(f"sync of the change: {sync_s:.2f} s — {stats.as_dict()}")
        probes = [("kn_search_deleted_gone", lambda: deleted not in _names_found(client, url, deleted)),
                  ("kn_search_inserted_found", lambda: inserted in _names_found(client, url, inserted)),
                  ("agent_deleted_gone", lambda: _topic(client, url, deleted) != deleted),
                  ("agent_inserted_found", lambda: _topic(client, url, inserted) == inserted)]
        first: dict[str, float] = {}
        latencies: list[float] = []
        streak = polls = 0
        confirmed = None
        while confirmed is None and time.perf_counter() - committed < 120:
            name, probe = probes[polls % len(probes)]
            polls += 1
            asked = time.perf_counter()
            ok = probe()
            now = time.perf_counter()
            latencies.append(round(now - asked, 3))
            if ok:
                first.setdefault(name, round(now - committed, 3))
            streak = streak + 1 if ok else 0
            if streak >= args.confirm * len(probes):  # every probe right on ``confirm`` rounds in a row
                confirmed = now - committed
        first_all = max(first.values()) if len(first) == len(probes) else None
        start = time.perf_counter()
        reply = client.post(f"{url}/api/query", json=modes_body, timeout=300)
        served = {"reflect_first_s": first_all, "reflect_first_by_probe_s": first,
                  "reflect_confirmed_s": round(confirmed, 3) if confirmed is not None else None,
                  "requests": polls, "first_request_latencies_s": latencies[:8],
                  "query_modes_first_request_s": round(time.perf_counter() - start, 3),
                  "query_modes_reflects": reply.status_code == 200 and inserted in reply.json().get("context", "")}
    figures = {
        "instances": len(instances), "links": len(links),
        "change": {"deleted": stats.instances_deleted, "updated": stats.instances_updated,
                   "inserted": stats.instances_inserted, "unchanged": stats.instances_unchanged,
                   "links_inserted": stats.links_inserted, "links_deleted": stats.links_deleted},
        "build_s": round(build_s, 2), "sync_s": round(sync_s, 3), "noop_sync_s": round(noop_s, 3),
        "workers": args.workers, **served,
    }
    baseline = {"full_load_s": round(full_s, 2)}
    ratio = {"sync_over_full_load": round(sync_s / full_s, 4),
             "kn_load_incremental_over_full": round((build_s + sync_s) / (build_s + full_s), 4)}
    rows = [("full load (baseline)", f"{full_s:.2f} s"), ("no-op sync", f"{noop_s:.2f} s"),
            (f"sync of a {args.fraction:.0%} change", f"{sync_s:.2f} s"),
            ("sync / full load", f"{ratio['sync_over_full_load']:.3f} (target ≤ 0.05)"),
            ("served answers reflect it (each probe)", f"{served.get('reflect_first_s')} s (target ≤ 2 s)"),
            (f"… {args.confirm} rounds in a row", f"{served.get('reflect_confirmed_s')} s"),
            ("first /api/query after it", f"{served.get('query_modes_first_request_s')} s")]
    width = max(len(r[0]) for r in rows)
    for label, value in rows:
        print(f"{label:<{width}}  {value}")
    write_result("kn_update", figures, baseline, ratio, f"medical, seed {args.seed}", len(instances))
    store.close()


if __name__ == "__main__":
    main()

"""The task runner flows use for per-shard work: Prefect's default (threads in the flow's process) or, with
``KGRAG_TASK_RUNNER=dask``, a :class:`prefect_dask.DaskTaskRunner` on the cluster at ``KGRAG_DASK_ADDRESS`` or
on a local cluster of ``KGRAG_DASK_WORKERS`` single-threaded worker processes started for the flow run.

    on_task_runner(my_flow)(...)          # == my_flow.with_options(task_runner=task_runner(get_settings()))(...)
    shards_for(get_settings())            # how many shards to cut the work into
    limit_threads(get_settings())         # in a shard task: torch threads = this worker's share of the cores

Workers read the same ``KGRAG_*`` settings (a local cluster inherits the environment; remote workers need it set
and the work dir on a shared filesystem).
"""

from __future__ import annotations

import os
from typing import Any

from prefect.task_runners import ThreadPoolTaskRunner

from kgrag.config import Settings, get_settings

__all__ = ["limit_threads", "on_task_runner", "shards_for", "task_runner"]

#: shards per worker (one: each shard reloads the graph and rebuilds PPR; more only pays on uneven shards)
SHARDS_PER_WORKER = 1


def task_runner(settings: Settings) -> Any:
    """A fresh task runner for one flow run (a runner is entered once)."""
    if settings.task_runner != "dask":
        return ThreadPoolTaskRunner(max_workers=1)  # the sequential reference: one shard at a time
    from prefect_dask import DaskTaskRunner  # on use: dask costs ~2 s at import, for the Dask runner only

    if settings.dask_address:
        return DaskTaskRunner(address=settings.dask_address)
    return DaskTaskRunner(cluster_kwargs={"n_workers": settings.dask_workers, "threads_per_worker": 1,
                                          "processes": True, "dashboard_address": None})


def shards_for(settings: Settings) -> int:
    """Shards to cut per-question work into: 1 on the default runner, a few per worker on Dask."""
    return 1 if settings.task_runner != "dask" else SHARDS_PER_WORKER * settings.dask_workers


def on_task_runner(flow: Any) -> Any:
    """``flow`` set to run its tasks on the configured runner (the default one unless ``KGRAG_TASK_RUNNER=dask``)."""
    return flow.with_options(task_runner=task_runner(get_settings()))


def limit_threads(settings: Settings) -> None:
    """On a local Dask cluster's worker: torch threads = the worker's share of the machine's cores (no
    oversubscription). The default runner and remote workers keep torch's own setting."""
    if settings.task_runner == "dask" and not settings.dask_address:
        import torch  # on use: torch costs ~3 s at import; flows that never train do not need it

        torch.set_num_threads(max(1, (os.cpu_count() or 1) // settings.dask_workers))

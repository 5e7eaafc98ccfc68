"""HTTP load helpers for the serving benchmarks: a ``kgrag serve`` on a free loopback port and keep-alive clients.

    server, base = start_server("sqlite:////tmp/kn.db", workers=2)
    figures = http_load(base, "/api/agent-retrieval/in/v1/kn/kn_search", bodies, clients=8, seconds=10)

:func:`http_load` posts JSON bodies from ``clients`` concurrent asyncio connections and counts what came back:
``errors`` (a status other than 200), ``dropped`` (no response at all: a refused or reset connection, a
timeout). With ``cycle=False`` every request takes the next unused body (distinct requests: the response
cache never answers); with ``cycle=True`` the clients walk the bodies again and again.
:func:`server_cpu_seconds` reads the CPU time the server's processes have used (Linux), for CPU per request.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import httpx

from bench.common import percentiles
from harness.servers.ports import free_port

__all__ = ["http_load", "server_cpu_seconds", "start_server", "stop_server"]


def start_server(db_url: str, workers: int, env: dict[str, str] | None = None,
                 startup_s: float = 600.0) -> tuple[subprocess.Popen, str]:
    """``kgrag serve --workers`` in its own process group on a free loopback port, serving ``db_url``; returns
    once every worker (``/healthz``'s ``pid``) has said it is up and no longer ``warming`` (kgrag.search.warm)."""
    port = free_port()
    work = Path(tempfile.mkdtemp(prefix="kgrag-bench-serve-"))
    full_env = {**os.environ, "KGRAG_DATABASE_URL": db_url, "KGRAG_WORK_DIR": str(work), **(env or {})}
    log = (work / "serve.log").open("wb")  # a file, not a pipe nobody reads (a full pipe blocks the server)
    proc = subprocess.Popen(
        [sys.executable, "-m", "kgrag.cli", "serve", "--port", str(port), "--workers", str(workers)],
        env=full_env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + startup_s
    warm: set[int] = set()
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"kgrag serve exited: {(work / 'serve.log').read_text()[-2000:]}")
        try:
            r = httpx.get(f"{base}/healthz", timeout=2)  # a new connection each time: any worker may answer
            body = r.json() if r.status_code == 200 else {}
            if body and not body.get("warming", False):
                warm.add(body["pid"])
            if len(warm) >= workers:
                return proc, base
        except (httpx.TransportError, ValueError):
            pass
        time.sleep(0.25)
    stop_server(proc)
    raise RuntimeError(f"kgrag serve was not up and warm within {startup_s:.0f} s")


def server_cpu_seconds(proc: subprocess.Popen) -> float | None:
    """User + system CPU seconds so far of every process in ``proc``'s process group (the server :func:`start_server`
    started and its workers), read from ``/proc``; None where there is no ``/proc``. The difference across a load
    window divided by the requests served is the server's CPU per request — a figure other jobs on the machine
    do not inflate the way they inflate requests/s."""
    proc_dir = Path("/proc")
    if not (proc_dir / "self" / "stat").exists():
        return None
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for entry in proc_dir.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # the process ended meanwhile
            continue
        fields = stat[stat.rfind(")") + 2:].split()  # after "pid (comm) ": state, ppid, pgrp, …
        if int(fields[2]) == proc.pid:
            total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
    return total


def stop_server(proc: subprocess.Popen) -> None:
    """Stop the server and its workers (the whole process group)."""
    try:
        os.killpg(proc.pid, 15)
        proc.wait(timeout=30)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        os.killpg(proc.pid, 9)
        proc.wait(timeout=30)


def http_load(base: str, path: str, bodies: list[dict], clients: int, seconds: float | None = None,
              cycle: bool = False, timeout_s: float = 120.0, headers: dict[str, str] | None = None,
              keep_latencies: bool = False) -> dict:
    """``clients`` concurrent keep-alive connections posting ``bodies`` to ``path`` until ``seconds`` have
    passed (``None``: until every body was sent once), each request with ``headers``. See the module docstring for
    ``cycle``; ``keep_latencies``: every request's seconds too (``latencies_s``)."""

    async def run() -> tuple[list[float], Counter, int, float]:
        latencies: list[float] = []
        statuses: Counter = Counter()
        cursor = 0
        stop = time.monotonic() + seconds if seconds is not None else float("inf")
        limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)

        async def client(i: int) -> None:
            nonlocal cursor
            async with httpx.AsyncClient(base_url=base, timeout=timeout_s, limits=limits, headers=headers) as http:
                n = 0
                while time.monotonic() < stop:
                    if cycle:
                        body = bodies[(i + n) % len(bodies)]
                    else:
                        if cursor >= len(bodies):
                            return
                        body, cursor = bodies[cursor], cursor + 1
                    t = time.perf_counter()
                    try:
                        r = await http.post(path, json=body)
                        statuses[r.status_code] += 1
                    except httpx.TransportError as exc:  # refused, reset, timed out: nothing came back
                        statuses[f"dropped:{type(exc).__name__}"] += 1
                    latencies.append(time.perf_counter() - t)
                    n += 1

        start = time.monotonic()
        await asyncio.gather(*(client(i) for i in range(clients)))
        return latencies, statuses, len(latencies), time.monotonic() - start

    latencies, statuses, count, elapsed = asyncio.run(run())
    dropped = sum(n for key, n in statuses.items() if isinstance(key, str))
    errors = sum(n for key, n in statuses.items() if not isinstance(key, str) and key != 200)
    return {"requests": count, "ok": statuses.get(200, 0), "errors": errors, "dropped": dropped,
            "statuses": {str(k): v for k, v in sorted(statuses.items(), key=str)},
            "seconds": round(elapsed, 2), "requests_per_s": round(count / elapsed, 1) if elapsed else 0.0,
            "clients": clients, **(percentiles(latencies) if latencies else {}),
            **({"latencies_s": latencies} if keep_latencies else {})}

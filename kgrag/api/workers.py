"""``kgrag serve --workers N``: N server processes on one port, each accepting on its own ``SO_REUSEPORT`` socket.

    serve_workers("127.0.0.1", 8000, workers=2)  # blocks; SIGINT / SIGTERM stop every worker

Why not uvicorn's ``--workers``: its workers share one listening socket, and whichever wakes first accepts every
connection that arrives while both are idle — an agent's pool of keep-alive connections, opened together, then
all lands on one worker while the other idles (measured: medical kn_search, 8 clients, 2 workers: one worker
took all 8 connections in 2 runs of 4 and served 36 req/s; spread over both, 70 req/s). With one socket per
worker the kernel spreads the connections over the workers by their address hash. Contract: each worker builds
the app from :func:`kgrag.api.app.create_app`; a worker that dies is started again (at most
:data:`MAX_RESTARTS` times in all); the call returns once every worker has stopped. Where the platform has no
``SO_REUSEPORT`` it falls back to uvicorn's workers.
"""

from __future__ import annotations

import multiprocessing
import signal
import socket
import time
from types import FrameType

__all__ = ["MAX_RESTARTS", "reuse_port_socket", "serve_workers"]

#: workers started again after dying, over the server's life, before it gives up and stops
MAX_RESTARTS = 10
APP = "kgrag.api.app:create_app"


def reuse_port_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``(host, port)`` with ``SO_REUSEPORT`` (IPv6 when ``host`` holds a colon)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    return sock


def _worker(host: str, port: int, log_level: str) -> None:
    import uvicorn

    sock = reuse_port_socket(host, port)
    config = uvicorn.Config(APP, factory=True, log_level=log_level)
    uvicorn.Server(config).run(sockets=[sock])


def serve_workers(host: str, port: int, workers: int, log_level: str = "warning") -> None:
    """Run ``workers`` server processes on ``host:port`` until SIGINT / SIGTERM (see the module docstring)."""
    if not hasattr(socket, "SO_REUSEPORT"):
        import uvicorn

        uvicorn.run(APP, factory=True, host=host, port=port, workers=workers, log_level=log_level)
        return
    probe = reuse_port_socket(host, port)  # the address is usable: fail here, not in every worker
    port = int(probe.getsockname()[1])  # port 0: the one the kernel picked, shared by every worker
    probe.close()
    context = multiprocessing.get_context("spawn")
    stopping = False

    def start() -> multiprocessing.process.BaseProcess:
        process = context.Process(target=_worker, args=(host, port, log_level), name="kgrag-serve-worker")
        process.start()
        return process

    def stop(_signum: int, _frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    processes = [start() for _ in range(workers)]
    restarts = 0
    try:
        while not stopping:
            time.sleep(0.2)
            for i, process in enumerate(processes):
                if process.exitcode is not None and not stopping:
                    restarts += 1
                    if restarts > MAX_RESTARTS:
                        stopping = True
                        break
                    processes[i] = start()
    finally:
        for process in processes:
            if process.exitcode is None:
                process.terminate()  # uvicorn's graceful shutdown on SIGTERM
        for process in processes:
            process.join(timeout=20)
            if process.exitcode is None:
                process.kill()
                process.join(timeout=5)
        for sig, handler in previous.items():
            signal.signal(sig, handler)

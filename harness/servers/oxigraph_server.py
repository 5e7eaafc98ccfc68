"""Launch a real ``oxigraph serve-read-only`` (PyPI ``oxigraph`` binary) over a store, on a loopback port.

Used by tests (a fixture) and benchmarks (SPARQL over HTTP).

    python -c "from harness.servers.oxigraph_server import oxigraph_binary; print(oxigraph_binary())"
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from harness.servers.ports import free_port
from kgrag.errors import SparqlError


def oxigraph_binary() -> str:
    """The ``oxigraph`` CLI installed beside this interpreter (or on PATH)."""
    candidate = Path(sys.executable).with_name("oxigraph")
    found = str(candidate) if candidate.exists() else shutil.which("oxigraph")
    if not found:
        raise SparqlError("the `oxigraph` server binary is missing (pip install oxigraph)")
    return found


@dataclass
class OxigraphServer:
    """A running server; ``url`` is its SPARQL query endpoint."""

    url: str
    process: subprocess.Popen
    location: Path

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def load_into(location: Path, ntriples: Path) -> None:
    """Bulk-load an N-Triples file into the store directory with the ``oxigraph load`` CLI."""
    subprocess.run([oxigraph_binary(), "load", "--location", str(location), "--file", str(ntriples)],
                   check=True, capture_output=True, timeout=600)


def serve_read_only(location: Path, port: int | None = None, timeout: float = 30.0) -> OxigraphServer:
    """Serve the store at ``location`` read-only on 127.0.0.1; returns once the endpoint answers."""
    port = port or free_port()
    proc = subprocess.Popen(
        [oxigraph_binary(), "serve-read-only", "--location", str(location), "--bind", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise SparqlError(f"oxigraph serve exited: {proc.stderr.read().decode(errors='replace')[:500]}")
        try:
            with urllib.request.urlopen(f"{base}/query?query=ASK%7B%7D", timeout=1):
                break
        except OSError:
            if time.monotonic() > deadline:
                proc.kill()
                raise SparqlError(f"oxigraph serve did not answer on {base} within {timeout:g}s") from None
            time.sleep(0.1)
    return OxigraphServer(url=f"{base}/query", process=proc, location=Path(location))

"""A throwaway Virtuoso 7 (Debian ``virtuoso-opensource``) on loopback ports, and its RDF bulk loader.

Contract:

- :func:`virtuoso_server` (a context manager) writes a ``virtuoso.ini`` into a directory (a temporary one by
  default): database, log and lock files there, free loopback ports for the isql ``ServerPort`` and the HTTP
  ``ServerPort``, ``DirsAllowed`` naming the load directories, small buffers, no plugins and no demo database,
  ``ResultSetMaxRows`` high enough that a kgrag query is never silently truncated. It starts
  ``virtuoso-t +foreground +configfile <dir>/virtuoso.ini`` in its own process group, waits until ``/sparql``
  answers an ``ASK``, yields a :class:`VirtuosoServer`, and always stops it (process-group kill) on exit.
  :func:`start_virtuoso` does the same without the ``with`` (the caller calls :meth:`VirtuosoServer.stop`);
  started again on the same directory and ports it serves the same data (the fault tests rely on it).
- :func:`bulk_load` loads every file matching a pattern in a directory (N-Triples, Turtle, ``.gz`` splits) into
  one named graph with ``ld_dir`` + ``rdf_loader_run()`` (``loaders`` of them in parallel) + ``checkpoint``,
  through ``isql-vt``, checks ``DB.DBA.load_list`` for errors and returns the triple count and the seconds.
- Every subprocess and HTTP call has a timeout; failures raise :class:`~kgrag.errors.SparqlError` with the
  server's log tail.

Query it with :class:`~kgrag.graph.remote_store.RemoteStore` (``url``, ``graph=<graph IRI>``).

Run: ``python -c "exec('from harness.servers.virtuoso import virtuoso_server\\nwith virtuoso_server() as s: print(s.url)')"``
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

from harness.servers.ports import free_port
from kgrag.errors import SparqlError
from kgrag.graph.sparql import iri

#: default named graph kgrag loads into (``KGRAG_SPARQL_GRAPH`` names it for queries)
DEFAULT_GRAPH = "http://kgrag.local/graph/default"
#: rows a SELECT may return before Virtuoso truncates (``[SPARQL] ResultSetMaxRows``)
RESULT_MAX_ROWS = 1_000_000


def virtuoso_binary() -> str:
    found = shutil.which("virtuoso-t")
    if not found:
        raise SparqlError("virtuoso-t is missing: install Debian's virtuoso-opensource (scripts/system_packages.sh)")
    return found


def isql_binary() -> str:
    found = shutil.which("isql-vt") or shutil.which("isql-v")
    if not found:
        raise SparqlError("isql-vt is missing: install Debian's virtuoso-opensource (scripts/system_packages.sh)")
    return found


def virtuoso_available() -> bool:
    """Whether both ``virtuoso-t`` and ``isql-vt`` are on PATH."""
    return bool(shutil.which("virtuoso-t") and (shutil.which("isql-vt") or shutil.which("isql-v")))


def virtuoso_ini(directory: Path, isql_port: int, http_port: int, dirs_allowed: Sequence[Path] = (),
                 number_of_buffers: int = 20_000, max_dirty_buffers: int = 15_000, threads: int = 1,
                 query_timeout_s: int = 120, result_max_rows: int = RESULT_MAX_ROWS,
                 checkpoint_interval: int = 0) -> str:
    """The ``virtuoso.ini`` text for a database in ``directory`` served on 127.0.0.1 only.

    Buffers are 8 KiB pages (20,000 ≈ 160 MiB); for a big load set ``number_of_buffers`` to about
    RAM × 0.66 / 8 KiB and ``max_dirty_buffers`` to ¾ of it (see docs/freebase-virtuoso.md).
    ``checkpoint_interval`` (minutes) 0: no automatic checkpoints (a throwaway server; :func:`bulk_load`
    checkpoints after a load, and the transaction log replays anything later on restart).
    """
    d = Path(directory).resolve()
    allowed = ", ".join(dict.fromkeys([".", str(d), *(str(Path(p).resolve()) for p in dirs_allowed)]))
    return f"""\
[Database]
DatabaseFile       = {d}/virtuoso.db
ErrorLogFile       = {d}/virtuoso.log
LockFile           = {d}/virtuoso.lck
TransactionFile    = {d}/virtuoso.trx
xa_persistent_file = {d}/virtuoso.pxa
ErrorLogLevel      = 7
FileExtend         = 200
MaxCheckpointRemap = 2000
Striping           = 0
TempStorage        = TempDatabase

[TempDatabase]
DatabaseFile       = {d}/virtuoso-temp.db
TransactionFile    = {d}/virtuoso-temp.trx
MaxCheckpointRemap = 2000
Striping           = 0

[Parameters]
ServerPort               = 127.0.0.1:{isql_port}
LiteMode                 = 0
DisableUnixSocket        = 1
DisableTcpSocket         = 0
MaxClientConnections     = 20
CheckpointInterval       = {checkpoint_interval}
O_DIRECT                 = 0
CaseMode                 = 2
MaxStaticCursorRows      = 5000
CheckpointAuditTrail     = 0
AllowOSCalls             = 0
SchedulerInterval        = 10
DirsAllowed              = {allowed}
ThreadCleanupInterval    = 0
ThreadThreshold          = 10
ResourcesCleanupInterval = 0
FreeTextBatchSize        = 100000
SingleCPU                = 0
PrefixResultNames        = 0
RdfFreeTextRulesSize     = 100
IndexTreeMaps            = 64
MaxMemPoolSize           = 100000000
MaxQueryMem              = 512M
VectorSize               = 1000
MaxVectorSize            = 1000000
AdjustVectorSize         = 0
ThreadsPerQuery          = {threads}
AsyncQueueMaxThreads     = {max(2, threads)}
NumberOfBuffers          = {number_of_buffers}
MaxDirtyBuffers          = {max_dirty_buffers}

[HTTPServer]
ServerPort                  = 127.0.0.1:{http_port}
ServerRoot                  = {d}/vsp
MaxClientConnections        = 20
DavRoot                     = DAV
EnabledDavVSP               = 0
HTTPProxyEnabled            = 0
TempASPXDir                 = 0
ServerThreads               = 20
MaxKeepAlives               = 10
KeepAliveTimeout            = 10
HTTPThreadSize              = 280000
HttpPrintWarningsInOutput   = 0
Charset                     = UTF-8
EnabledGzipContent          = 0

[Client]
SQL_PREFETCH_ROWS  = 100
SQL_PREFETCH_BYTES = 16000
SQL_QUERY_TIMEOUT  = 0
SQL_TXN_TIMEOUT    = 0

[SPARQL]
ResultSetMaxRows           = {result_max_rows}
MaxQueryCostEstimationTime = 400
MaxQueryExecutionTime      = {query_timeout_s}
DefaultGraph               = {DEFAULT_GRAPH}
"""


@dataclass
class LoadReport:
    """What :func:`bulk_load` did: files loaded, triples in the graph afterwards, wall seconds (load +
    checkpoint), and the triples per second that makes."""

    files: int
    triples: int
    seconds: float
    graph: str

    @property
    def triples_per_s(self) -> float:
        return self.triples / self.seconds if self.seconds > 0 else 0.0


@dataclass
class VirtuosoServer:
    """A running Virtuoso: ``url`` is its SPARQL endpoint (``http://127.0.0.1:<http_port>/sparql``)."""

    directory: Path
    isql_port: int
    http_port: int
    process: subprocess.Popen
    password: str = "dba"
    graphs: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}/sparql"

    @property
    def log_path(self) -> Path:
        return self.directory / "virtuoso.log"

    def log_tail(self, chars: int = 1500) -> str:
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")[-chars:]
        except OSError:
            return ""

    def alive(self) -> bool:
        return self.process.poll() is None

    def isql(self, sql: str, timeout: float = 600.0) -> str:
        """Run SQL statements through ``isql-vt`` (``exec=``); returns its output, raises on an error."""
        cmd = [isql_binary(), f"127.0.0.1:{self.isql_port}", "dba", self.password, "VERBOSE=OFF", "BANNER=OFF",
               "PROMPT=OFF", "ECHO=OFF", "ERRORS=STDOUT", f"exec={sql}"]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired as exc:
            raise SparqlError(f"isql on Virtuoso port {self.isql_port} timed out after {timeout:g}s") from exc
        out = done.stdout + done.stderr
        if done.returncode != 0 or "*** Error" in out:
            raise SparqlError(f"Virtuoso isql failed (exit {done.returncode}): {out.strip()[:800]}")
        return out

    def stop(self, timeout: float = 20.0) -> None:
        """Stop the server: SIGTERM to its process group, SIGKILL after ``timeout`` seconds."""
        _kill_group(self.process, signal.SIGTERM)
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(self.process, signal.SIGKILL)
            self.process.wait(timeout=10)

    def restart(self, timeout: float = 90.0) -> None:
        """Stop and start again on the same database, ports and settings (same ``url``).

        Do it after a bulk load before serving queries: right after a load Virtuoso 7.2 may keep a plan built on a
        stale sample (seen here: ``?s ?p <o>`` in one graph driven by an ``RDF_QUAD_GS`` scan estimated at 0.29
        rows, 0.4-0.8 s a query instead of 2 ms, in some server instances only); a restart samples afresh
        (reported upstream as openlink/virtuoso-opensource#1023)."""
        self.stop()
        fresh = start_virtuoso(self.directory, isql_port=self.isql_port, http_port=self.http_port,
                               reuse_ini=True, timeout=timeout)
        self.process = fresh.process

    def kill(self) -> None:
        """Kill the server at once (SIGKILL to its group): what a crash looks like to clients."""
        _kill_group(self.process, signal.SIGKILL)
        self.process.wait(timeout=10)


def _kill_group(process: subprocess.Popen, sig: int) -> None:
    if process.poll() is not None:
        return
    with suppress(ProcessLookupError):
        os.killpg(process.pid, sig)


def _sparql_answers(url: str, timeout: float) -> bool:
    query = urllib.parse.urlencode({"query": "ASK { ?s ?p ?o }", "format": "application/sparql-results+json"})
    try:
        with urllib.request.urlopen(f"{url}?{query}", timeout=timeout) as resp:
            return resp.status == 200
    except OSError:
        return False


def start_virtuoso(directory: Path, isql_port: int | None = None, http_port: int | None = None,
                   dirs_allowed: Sequence[Path] = (), number_of_buffers: int = 20_000,
                   max_dirty_buffers: int = 15_000, threads: int = 1, result_max_rows: int = RESULT_MAX_ROWS,
                   timeout: float = 90.0, reuse_ini: bool = False) -> VirtuosoServer:
    """Start Virtuoso on the database in ``directory`` (created if new); returns once ``/sparql`` answers.
    ``reuse_ini``: keep the ``virtuoso.ini`` already there (a restart), else write one from the arguments."""
    directory = Path(directory).resolve()
    (directory / "vsp").mkdir(parents=True, exist_ok=True)
    isql_port = isql_port or free_port()
    http_port = http_port or free_port()
    ini = directory / "virtuoso.ini"
    if not (reuse_ini and ini.is_file()):
        ini.write_text(virtuoso_ini(directory, isql_port, http_port, dirs_allowed, number_of_buffers,
                                    max_dirty_buffers, threads, result_max_rows=result_max_rows), encoding="utf-8")
    (directory / "virtuoso.lck").unlink(missing_ok=True)  # a killed server leaves its lock behind
    proc = subprocess.Popen([virtuoso_binary(), "+foreground", "+configfile", str(ini)], cwd=directory,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    server = VirtuosoServer(directory=directory, isql_port=isql_port, http_port=http_port, process=proc)
    deadline = time.monotonic() + timeout
    while not _sparql_answers(server.url, timeout=2.0):
        if proc.poll() is not None:
            raise SparqlError(f"virtuoso-t exited with {proc.returncode}: {server.log_tail()}")
        if time.monotonic() > deadline:
            server.stop()
            raise SparqlError(f"Virtuoso did not answer on {server.url} within {timeout:g}s: {server.log_tail()}")
        time.sleep(0.2)
    return server


@contextmanager
def virtuoso_server(directory: Path | None = None, **options: object) -> Iterator[VirtuosoServer]:
    """A Virtuoso for the ``with`` block (a temporary database directory unless ``directory`` is given);
    ``options`` go to :func:`start_virtuoso`. Always stopped on exit."""
    with tempfile.TemporaryDirectory(prefix="kgrag-virtuoso-") as tmp:
        server = start_virtuoso(Path(directory or tmp), **options)  # type: ignore[arg-type]
        try:
            yield server
        finally:
            server.stop()


def _sql_string(value: str) -> str:
    """A single-quoted SQL string literal (quotes doubled; no backslash escapes in Virtuoso SQL strings)."""
    if "\x00" in value or "\n" in value or "\r" in value:
        raise ValueError(f"unsafe value for an isql statement: {value!r}")
    return "'" + value.replace("'", "''") + "'"


def graph_triples(server: VirtuosoServer, graph: str, timeout: float = 300.0) -> int:
    """Triples in one named graph (SPARQL over HTTP with a ``FROM`` clause)."""
    query = f"SELECT (COUNT(*) AS ?n) FROM {iri(graph)} WHERE {{ ?s ?p ?o }}"
    data = urllib.parse.urlencode({"query": query, "format": "application/sparql-results+json"}).encode()
    try:
        with urllib.request.urlopen(server.url, data=data, timeout=timeout) as resp:
            rows = json.load(resp)["results"]["bindings"]
    except OSError as exc:
        raise SparqlError(f"cannot count graph {graph} on {server.url}: {exc}") from exc
    return int(rows[0]["n"]["value"]) if rows else 0


def bulk_load(server: VirtuosoServer, directory: Path, graph: str = DEFAULT_GRAPH, pattern: str = "*.nt",
              loaders: int = 1, clear: bool = True, timeout: float = 3600.0) -> LoadReport:
    """Load every ``pattern`` file of ``directory`` (which must be in ``DirsAllowed``) into ``graph``.

    ``ld_dir`` registers the files, ``loaders`` concurrent ``rdf_loader_run()`` calls load them (one per core
    for a big dump split into many files), ``checkpoint`` makes the load durable. ``clear`` drops the graph
    first. Raises :class:`SparqlError` when a file failed (``ll_error`` in ``DB.DBA.load_list``).
    """
    directory = Path(directory).resolve()
    files = sorted(directory.glob(pattern))
    if not files:
        raise SparqlError(f"no {pattern} files to load in {directory}")
    iri(graph)  # validates the IRI
    d, p, g = _sql_string(str(directory)), _sql_string(pattern), _sql_string(graph)
    start = time.perf_counter()
    if clear:
        server.isql(f"SPARQL CLEAR GRAPH {iri(graph)};", timeout=timeout)
    server.isql(f"DELETE FROM DB.DBA.load_list WHERE ll_file LIKE {_sql_string(str(directory) + '/%')};"
                f"ld_dir({d}, {p}, {g});", timeout=timeout)
    if loaders <= 1:
        server.isql("rdf_loader_run();", timeout=timeout)
    else:
        procs = [subprocess.Popen([isql_binary(), f"127.0.0.1:{server.isql_port}", "dba", server.password,
                                   "exec=rdf_loader_run();"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, text=True) for _ in range(loaders)]
        try:
            outputs = [proc.communicate(timeout=timeout)[0] for proc in procs]
        except subprocess.TimeoutExpired as exc:
            for proc in procs:
                proc.kill()
            raise SparqlError(f"rdf_loader_run did not finish within {timeout:g}s") from exc
        bad = [o for o in outputs if "*** Error" in o]
        if bad:
            raise SparqlError(f"rdf_loader_run failed: {bad[0].strip()[:800]}")
    server.isql("checkpoint;", timeout=timeout)
    seconds = time.perf_counter() - start
    errors = server.isql(
        f"SELECT ll_file, ll_error FROM DB.DBA.load_list WHERE ll_graph = {g} AND ll_error IS NOT NULL;",
        timeout=60)
    failed = [line for line in errors.splitlines() if str(directory) in line]
    if failed:
        raise SparqlError(f"Virtuoso could not load {len(failed)} file(s): {' | '.join(failed)[:800]}")
    server.graphs.append(graph)
    return LoadReport(files=len(files), triples=graph_triples(server, graph), seconds=seconds, graph=graph)


__all__ = ["DEFAULT_GRAPH", "LoadReport", "VirtuosoServer", "bulk_load", "graph_triples", "start_virtuoso",
           "virtuoso_available", "virtuoso_ini", "virtuoso_server"]

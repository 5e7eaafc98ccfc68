"""A throwaway PostgreSQL cluster for tests and benchmarks: ``initdb`` in a temp dir, a free loopback port, stopped
and removed on exit.

Contract: :func:`throwaway_postgres` is a context manager yielding a running :class:`PostgresCluster`
(``cluster.url`` is its SQLAlchemy URL, ``postgresql+psycopg://postgres@127.0.0.1:PORT/postgres``; trust auth on
loopback only). On exit the server is stopped with ``pg_ctl stop -m immediate`` (always, even after an error) and
the directory removed. The cluster is tuned for throwaway speed, not durability: ``fsync=off``,
``synchronous_commit=off``, ``full_page_writes=off``, small ``shared_buffers``; ``--locale=C`` so text sorts by
code point like SQLite. PostgreSQL refuses to run as root: when this process is root the server binaries run as
the ``postgres`` system user (``runuser -u postgres --``, else ``setpriv``) on a directory chowned to it; otherwise
they run as the current user. :meth:`PostgresCluster.stop` / :meth:`PostgresCluster.start` restart it on the same
port and data (fault tests). :meth:`PostgresCluster.create_database` makes a fresh database and returns its URL.
The binaries are found through ``KGRAG_PG_BINDIR``, ``pg_config --bindir``, or ``/usr/lib/postgresql/*/bin``
(Debian's ``postgresql``); without them :class:`PostgresUnavailable` is raised.

    python -c "from harness.servers.postgres import throwaway_postgres as t; c = t().__enter__(); print(c.url)"
"""

from __future__ import annotations

import contextlib
import grp
import os
import pwd
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
from psycopg import sql

from harness.servers.ports import free_port

__all__ = ["PostgresCluster", "PostgresUnavailable", "find_bindir", "throwaway_postgres"]

_DB_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


class PostgresUnavailable(RuntimeError):
    """The PostgreSQL server binaries (or the user to run them as) are not on this machine."""


def find_bindir() -> Path:
    """The directory holding ``initdb``/``pg_ctl`` (see the module docstring); raises :class:`PostgresUnavailable`."""
    env = os.environ.get("KGRAG_PG_BINDIR")
    candidates: list[Path] = [Path(env)] if env else []
    pg_config = shutil.which("pg_config")
    if pg_config:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            out = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, timeout=10, check=True)
            candidates.append(Path(out.stdout.strip()))

    def version(p: Path) -> tuple[int, ...]:
        return tuple(int(x) for x in re.findall(r"\d+", p.parent.name)) or (0,)

    candidates += sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=version, reverse=True)
    for bindir in candidates:
        if (bindir / "initdb").is_file() and (bindir / "pg_ctl").is_file():
            return bindir
    raise PostgresUnavailable(
        "PostgreSQL server binaries not found (install Debian's `postgresql`: scripts/system_packages.sh, "
        "or set KGRAG_PG_BINDIR)"
    )


def _as_server_user() -> tuple[list[str], str | None]:
    """The command prefix that runs a server binary as a non-root user, and that user's name (None: ourselves)."""
    if os.geteuid() != 0:
        return [], None

    try:
        pwd.getpwnam("postgres")
    except KeyError:
        raise PostgresUnavailable("running as root and there is no `postgres` system user to run the server") from None
    if shutil.which("runuser"):
        return ["runuser", "-u", "postgres", "--"], "postgres"
    if shutil.which("setpriv"):
        uid, gid = pwd.getpwnam("postgres").pw_uid, grp.getgrnam("postgres").gr_gid
        return ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--"], "postgres"
    raise PostgresUnavailable("running as root and neither runuser nor setpriv is available")


@dataclass
class PostgresCluster:
    """One initdb'd cluster in ``root`` listening on ``127.0.0.1:port`` (see the module docstring)."""

    root: Path
    port: int
    bindir: Path
    prefix: list[str] = field(default_factory=list)
    superuser: str = "postgres"

    @property
    def datadir(self) -> Path:
        return self.root / "data"

    @property
    def logfile(self) -> Path:
        return self.root / "server.log"

    def url_for(self, dbname: str) -> str:
        """SQLAlchemy URL of database ``dbname`` (psycopg 3 driver)."""
        return f"postgresql+psycopg://{self.superuser}@127.0.0.1:{self.port}/{dbname}"

    @property
    def url(self) -> str:
        return self.url_for("postgres")

    def _run(self, *args: str, timeout: float = 120) -> None:
        cmd = [*self.prefix, str(self.bindir / args[0]), *args[1:]]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
        if proc.returncode != 0:
            log = self.logfile.read_text(errors="replace")[-2000:] if self.logfile.exists() else ""
            raise RuntimeError(f"{args[0]} failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}\n{log}")

    def init(self, shared_buffers: str = "32MB") -> None:
        self._run("initdb", "-D", str(self.datadir), "-U", self.superuser, "--auth=trust", "--encoding=UTF8",
                  "--locale=C", "--no-sync")
        settings = {
            "port": str(self.port),
            "listen_addresses": "'127.0.0.1'",
            "unix_socket_directories": f"'{self.root}'",
            "fsync": "off",
            "synchronous_commit": "off",
            "full_page_writes": "off",
            "shared_buffers": shared_buffers,
            "max_connections": "100",
            "logging_collector": "off",
        }
        with (self.datadir / "postgresql.conf").open("a") as conf:
            conf.write("\n# harness.servers.postgres: a throwaway cluster\n")
            conf.writelines(f"{k} = {v}\n" for k, v in settings.items())

    def start(self, timeout: float = 60) -> None:
        """Start the server and wait until it accepts connections."""
        self._run("pg_ctl", "-D", str(self.datadir), "-l", str(self.logfile), "-w", "-t", str(int(timeout)),
                  "start", timeout=timeout + 30)

    def stop(self, mode: str = "immediate") -> None:
        """Stop the server (``immediate``: no checkpoint, what a crash looks like to clients)."""
        if mode not in ("smart", "fast", "immediate"):
            raise ValueError(f"unknown stop mode {mode!r}")
        self._run("pg_ctl", "-D", str(self.datadir), "-m", mode, "-w", "stop", timeout=90)

    def is_running(self) -> bool:
        return (self.datadir / "postmaster.pid").exists()

    def _admin(self, statement_parts: tuple[str, str]) -> None:
        verb, name = statement_parts
        with psycopg.connect(host="127.0.0.1", port=self.port, user=self.superuser, dbname="postgres",
                             autocommit=True, connect_timeout=10) as conn:
            conn.execute(sql.SQL(verb).format(sql.Identifier(name)))

    def create_database(self, name: str) -> str:
        """Create database ``name`` (lower-case identifier) and return its URL."""
        if not _DB_NAME.match(name):
            raise ValueError(f"not a plain database name: {name!r}")
        self._admin(("CREATE DATABASE {}", name))
        return self.url_for(name)

    def drop_database(self, name: str) -> None:
        """Drop database ``name`` (closing its connections first)."""
        if not _DB_NAME.match(name):
            raise ValueError(f"not a plain database name: {name!r}")
        self._admin(("DROP DATABASE IF EXISTS {} WITH (FORCE)", name))


@contextlib.contextmanager
def throwaway_postgres(shared_buffers: str = "32MB", base_dir: Path | None = None) -> Iterator[PostgresCluster]:
    """A fresh running cluster (see the module docstring); always stopped and removed on exit.

    ``base_dir`` is where its temp directory is made (default: the system temp dir; it must be reachable by the
    ``postgres`` user when running as root — pytest's ``tmp_path`` is not, being private to root)."""
    bindir = find_bindir()
    prefix, user = _as_server_user()
    root = Path(tempfile.mkdtemp(prefix="kgrag-pg-", dir=base_dir))
    cluster: PostgresCluster | None = None
    try:
        if user is not None:
            shutil.chown(root, user=user, group=user)
            root.chmod(0o700)
        for attempt in range(3):  # the free port may be taken between choosing and binding it
            cluster = PostgresCluster(root=root, port=free_port(), bindir=bindir, prefix=prefix)
            if not cluster.datadir.exists():
                cluster.init(shared_buffers)
            else:
                conf = cluster.datadir / "postgresql.conf"
                conf.write_text(re.sub(r"(?m)^port = \d+$", f"port = {cluster.port}", conf.read_text()))
            try:
                cluster.start()
                break
            except RuntimeError:
                if attempt == 2:
                    raise
                time.sleep(0.5)
        yield cluster
    finally:
        if cluster is not None and cluster.is_running():
            with contextlib.suppress(Exception):
                cluster.stop("immediate")
        shutil.rmtree(root, ignore_errors=True)

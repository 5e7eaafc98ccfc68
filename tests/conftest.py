"""Shared pytest setup: fixtures live in tests/fixtures/ and are registered here."""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

# pytest-xdist (make test runs two workers): a worker starts with COLUMNS=80 and LINES=24 in its environment
# (rich consoles made at import would keep that width): give it the controller's terminal variables
_TERMINAL_VARS = ("COLUMNS", "LINES")
if not os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ["KGRAG_TEST_TERMINAL"] = " ".join(f"{v}={os.environ.get(v, '')}" for v in _TERMINAL_VARS)
elif "KGRAG_TEST_TERMINAL" in os.environ:
    for _pair in os.environ["KGRAG_TEST_TERMINAL"].split():
        _var, _, _value = _pair.partition("=")
        if _value:
            os.environ[_var] = _value
        else:
            os.environ.pop(_var, None)

# one torch / BLAS thread per worker (set before torch loads; servers and CLI subprocesses inherit it): two workers
# with a thread per core each would oversubscribe the machine
if os.environ.get("PYTEST_XDIST_WORKER"):
    for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(_var, "1")

# each worker its own Prefect home, so their ephemeral APIs do not share (and lock) one SQLite database; set
# before anything imports prefect
if os.environ.get("PYTEST_XDIST_WORKER"):
    _prefect_home = Path(os.environ.get("PREFECT_HOME") or "~/.prefect").expanduser() / os.environ["PYTEST_XDIST_WORKER"]
    _prefect_home.mkdir(parents=True, exist_ok=True)
    os.environ["PREFECT_HOME"] = str(_prefect_home)

pytest_plugins = [
    "fixtures.llm_server",
    "fixtures.oxigraph_server",
    "fixtures.virtuoso_server",
    "fixtures.settings",
    "fixtures.prefect_harness",
    "fixtures.kg_tools",
    "fixtures.freebase_kg",
    "fixtures.medical_kn",
    "fixtures.langgraph_server",
    "fixtures.demo_kg",
    "fixtures.library_kn",
    "fixtures.postgres",
    "fixtures.console",
]


# ---------------------------------------------------------------------------------------------- parallel runs
#: fixture -> its group: fixtures too costly to set up on more than one pytest-xdist worker (the medical network:
#: minutes), or that must not run beside each other (``langgraph dev`` keeps its state in the repository root).
#: Every test file using one (directly or through other fixtures) runs on the same worker as the other files
#: using one of its group.
SHARED_FIXTURES = {"medical_db": "medical", "virtuoso": "virtuoso", "metaqa_prepared": "virtuoso",
                   "langgraph_url": "langgraph", "kg_langgraph_url": "langgraph"}
_GROUPS_ENV = "KGRAG_TEST_GROUPS_FILE"
#: seconds each test file took (its tests' setup, call and teardown; make test on 2 cores): the controller hands
#: out the longest groups first, so that no long group starts last (xdist's own order is by test count). A file
#: not listed counts :data:`_UNLISTED_TEST_S` a test. Refresh: ``KGRAG_TEST_DURATIONS_OUT=tests/durations.json
#: make test`` (the controller writes the run's own figures there)
DURATIONS = Path(__file__).with_name("durations.json")
_UNLISTED_TEST_S = 0.1
_DURATIONS_OUT_ENV = "KGRAG_TEST_DURATIONS_OUT"


def _file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def pytest_configure(config: pytest.Config) -> None:
    """The xdist controller of ``--dist loadgroup`` schedules by file group (:class:`_XdistFileGroups`) and names
    the file where its workers write which test file runs with which (they inherit the environment)."""
    if config.getoption("dist", "no") == "loadgroup" and not hasattr(config, "workerinput"):
        import tempfile
        import uuid

        os.environ[_GROUPS_ENV] = str(Path(tempfile.gettempdir()) / f"kgrag-test-groups-{uuid.uuid4().hex}.json")
        config.pluginmanager.register(_XdistFileGroups(), "kgrag-xdist-file-groups")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """An xdist worker of ``pytest -n N --dist loadgroup`` (``make test TEST_WORKERS=N``) writes each test file's group: the file
    itself, merged with every other file that uses a fixture of the same :data:`SHARED_FIXTURES` group, so that
    a file's module fixtures and each such fixture are set up on one worker only (:class:`_FileGroups`)."""
    target = os.environ.get(_GROUPS_ENV)
    if not target or not hasattr(config, "workerinput"):
        return
    parent: dict[str, str] = {}

    def find(node: str) -> str:
        parent.setdefault(node, node)
        while parent[node] != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    for item in items:
        for name, group in SHARED_FIXTURES.items():
            if name in item.fixturenames:
                parent[find(_file_of(item.nodeid))] = find(f"uses:{group}")
    groups = {_file_of(item.nodeid): find(_file_of(item.nodeid)) for item in items}
    tmp = Path(f"{target}.{os.environ.get('PYTEST_XDIST_WORKER', 'w')}")
    tmp.write_text(json.dumps(groups))
    tmp.replace(target)  # every worker collects the same tests: any one's map will do


class _XdistFileGroups:
    """A plugin registered only under xdist (its hook is unknown without it); on the controller it also sums each
    test file's seconds, written to ``KGRAG_TEST_DURATIONS_OUT`` at the end when that is set."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        file = _file_of(report.nodeid)
        self.seconds[file] = self.seconds.get(file, 0.0) + report.duration

    def pytest_sessionfinish(self) -> None:
        out = os.environ.get(_DURATIONS_OUT_ENV)
        if out and self.seconds:
            figures = {file: round(seconds, 1) for file, seconds in sorted(self.seconds.items())}
            Path(out).write_text(json.dumps(figures, indent=1) + "\n")

    @staticmethod
    def pytest_xdist_make_scheduler(config: pytest.Config, log):  # noqa: ANN205, ANN001
        """Whole groups of test files (see :func:`pytest_collection_modifyitems`) to a worker, the longest
        (:data:`DURATIONS`) first. (xdist's own loadgroup reads ``xdist_group`` marks through a node id suffix that
        pytest 9 no longer keeps.)"""
        from xdist.scheduler import LoadScopeScheduling

        class FileGroups(LoadScopeScheduling):
            _groups: dict[str, str] | None = None

            def _split_scope(self, nodeid: str) -> str:
                if self._groups is None:  # scheduling starts once every worker has collected (and written the map)
                    path = Path(os.environ[_GROUPS_ENV])
                    self._groups = json.loads(path.read_text()) if path.is_file() else {}
                    path.unlink(missing_ok=True)
                file = _file_of(nodeid)
                return self._groups.get(file, file)

            def _assign_work_unit(self, node) -> None:  # noqa: ANN001 - xdist's WorkerController
                if not self._longest_first:  # once, when every group is queued: the longest first
                    self._longest_first = True
                    units = sorted(self.workqueue.items(), key=lambda unit: -_expected_seconds(unit[1]))
                    self.workqueue.clear()
                    self.workqueue.update(units)
                super()._assign_work_unit(node)

            _longest_first = False

        return FileGroups(config, log)


def _expected_seconds(nodeids: Iterable[str]) -> float:
    """The seconds a group of tests is expected to take: its files' :data:`DURATIONS`, else
    :data:`_UNLISTED_TEST_S` a test."""
    tests = Counter(_file_of(nodeid) for nodeid in nodeids)
    listed = _listed_seconds()
    return sum(listed.get(file, _UNLISTED_TEST_S * count) for file, count in tests.items())


@lru_cache(maxsize=1)
def _listed_seconds() -> dict[str, float]:
    try:
        return json.loads(DURATIONS.read_text())
    except (OSError, ValueError):  # none (or unreadable): every file by its test count
        return {}

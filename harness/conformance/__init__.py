"""Backend conformance suites, LangGraph-checkpoint style: one contract, one suite of test functions, run against
every backend.

Each module holds a contract class whose ``test_*`` methods use only the product's interface; a backend's test
class in tests/ subclasses it and provides the one fixture the suite asks for (so adding a backend is one class):

- :mod:`harness.conformance.network_store` — :class:`NetworkStoreContract` over ``NetworkStore``, needing
  ``new_database`` (a callable making an empty database's URL); run on SQLite and PostgreSQL by
  tests/test_conformance_network_store.py;
- :mod:`harness.conformance.graph_store` — :class:`GraphStoreContract` over ``GraphStore``, needing ``backend``
  (a :class:`GraphBackend`: stores holding the conformance graph and the demo KG); run on the embedded
  pyoxigraph store, ``oxigraph serve`` and Virtuoso by tests/test_conformance_graph_store.py.

The classes' names do not start with ``Test``: pytest collects them only through a backend's subclass.

    .venv/bin/python -m pytest -q tests/test_conformance_network_store.py tests/test_conformance_graph_store.py
"""

import pytest

# the suites' plain ``assert`` statements report their values like a test module's (the modules are imported after
# this line, through the test files)
pytest.register_assert_rewrite("harness.conformance.graph_store", "harness.conformance.network_store")

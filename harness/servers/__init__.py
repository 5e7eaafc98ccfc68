"""Test and benchmark support: launchers of real servers as child processes, each started on a free loopback
port and always stopped: ``oxigraph serve-read-only`` (:mod:`.oxigraph_server`), Virtuoso (:mod:`.virtuoso`), PostgreSQL
(:mod:`.postgres`), ``prefect server start`` (:mod:`.prefect_server`), ``langgraph dev`` (:mod:`.langgraph_dev`)
and ``kgrag serve`` (:mod:`.kgrag_serve`); what they share: the process wrapper (:mod:`.process`) and
:func:`~harness.servers.ports.free_port` (:mod:`.ports`). Code that only talks to a server stays with its client
(the SPARQL stores in :mod:`kgrag.graph`); what the product itself launches (``kgrag serve`` and its workers:
:mod:`kgrag.api.workers`) stays in the product.

    python -c "from harness.servers.ports import free_port; print(free_port())"
"""

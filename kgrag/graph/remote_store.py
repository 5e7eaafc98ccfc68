"""Remote SPARQL 1.1 endpoint over HTTP via SPARQLWrapper (``oxigraph serve``, Virtuoso, QLever, Fuseki).

``graph`` (setting ``KGRAG_SPARQL_GRAPH``) names the graph the queries run on, sent as the SPARQL protocol's
``default-graph-uri`` parameter, so query text never changes: Virtuoso then queries that graph only (without it
Virtuoso's default graph is the union of every graph, its system graphs included); ``oxigraph serve`` honours
the same parameter. Terms come back as the embedded store gives them (an ``xsd:boolean`` is
``true`` / ``false``; Virtuoso answers ``1`` / ``0``), except a literal typed ``xsd:string`` in the data:
Virtuoso keeps RDF 1.0's distinction from a plain literal and names the type, which a query must then name too
to find it (the embedded store never names it: both are one literal there). A query of another form than the
call's (a CONSTRUCT through :meth:`RemoteStore.select`, which Virtuoso answers with rows) is refused before it
is sent. Virtuoso quirks also handled here: SPARQL 1.0 ``typed-literal`` result terms, and results it cut
short without an HTTP error (``ResultSetMaxRows`` / an anytime-query timeout, reported only in the
``X-SPARQL-MaxRows`` / ``X-SQL-State`` headers), which raise :class:`SparqlError` instead of silently
returning fewer rows.

Run: ``python -c "from kgrag.graph.remote_store import RemoteStore as R; print(R('http://127.0.0.1:8890/sparql', graph='http://kgrag.local/graph/metaqa').count_triples())"``
"""

from __future__ import annotations

import http.client
import logging
import random
import socket
import time
import urllib.error
from collections.abc import Mapping

from SPARQLWrapper import ASK, JSON, POST, SELECT, SPARQLWrapper
from SPARQLWrapper.SPARQLExceptions import SPARQLWrapperException

from kgrag.errors import SparqlError
from kgrag.graph.iri import XSD
from kgrag.graph.store import GraphStore, Row, Term

log = logging.getLogger(__name__)

_CONNECTION_ERRORS = (ConnectionError, http.client.RemoteDisconnected, http.client.IncompleteRead)
_BOOLEAN = f"{XSD}boolean"
#: Virtuoso's booleans (it stores them as integers) in their canonical lexical form
_BOOLEAN_FORMS = {"1": "true", "0": "false"}


def _is_timeout(exc: BaseException) -> bool:
    reason = getattr(exc, "reason", exc)
    return isinstance(reason, TimeoutError | socket.timeout)


def _parse_term(binding: dict) -> Term:
    kind = binding.get("type")
    if kind == "uri":
        return Term("uri", binding["value"])
    if kind == "bnode":
        return Term("bnode", binding["value"])
    # "literal" or the SPARQL 1.0 "typed-literal"
    value, datatype = binding["value"], binding.get("datatype")
    if datatype == _BOOLEAN:
        value = _BOOLEAN_FORMS.get(value, value)
    return Term("literal", value, binding.get("xml:lang"), datatype)


class RemoteStore(GraphStore):
    """A SPARQL endpoint. Connection errors are retried with exponential backoff (``retries`` times);
    timeouts and HTTP errors raise :class:`SparqlError` at once with the status and the server's message."""

    def __init__(
        self,
        endpoint: str,
        timeout: float = 120.0,
        retries: int = 3,
        backoff: float = 0.5,
        max_backoff: float = 8.0,
        graph: str | None = None,
    ) -> None:
        if not endpoint.startswith(("http://", "https://")):
            raise SparqlError(f"SPARQL endpoint must be an http(s) URL, got {endpoint!r} (setting KGRAG_SPARQL_ENDPOINT)")
        self.location = self.endpoint = endpoint
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        if graph and any(c in graph for c in '<>"{}|^`\\ \n\r\t'):
            raise SparqlError(f"invalid SPARQL graph IRI {graph!r} (setting KGRAG_SPARQL_GRAPH)")
        self.graph = graph or None
        if self.graph:
            self.location = f"{endpoint} (graph <{self.graph}>)"

    def _request(self, query: str, timeout: float | None, form: str) -> dict:
        client = SPARQLWrapper(self.endpoint, agent="kgrag")
        client.setQuery(query)
        if client.queryType != form:  # SPARQLWrapper's reading of the query form (SELECT when it finds none)
            raise SparqlError(f"{form.lower()}() needs {'an' if form == ASK else 'a'} {form} query")
        client.setReturnFormat(JSON)
        client.setMethod(POST)
        client.timeout = timeout or self.timeout  # float seconds (setTimeout would truncate to int)
        if self.graph:
            client.addDefaultGraph(self.graph)
        attempt = 0
        while True:
            try:
                response = client.query()
                self._check_complete(response.info())
                return response.convert()
            except SPARQLWrapperException as exc:
                raise SparqlError(f"SPARQL endpoint {self.endpoint} rejected the query: {exc}") from exc
            except urllib.error.HTTPError as exc:
                body = exc.read()[:500].decode("utf-8", "replace")
                raise SparqlError(f"SPARQL endpoint {self.endpoint} answered HTTP {exc.code}: {body}") from exc
            except (urllib.error.URLError, *_CONNECTION_ERRORS, TimeoutError) as exc:
                if _is_timeout(exc):
                    raise SparqlError(
                        f"SPARQL query to {self.endpoint} timed out after {client.timeout:g}s"
                    ) from exc
                if attempt >= self.retries:
                    raise SparqlError(
                        f"cannot reach SPARQL endpoint {self.endpoint} after {attempt + 1} attempts: {exc}"
                    ) from exc
                delay = min(self.max_backoff, self.backoff * 2**attempt) * (1 + 0.1 * random.random())
                log.warning("SPARQL endpoint %s unreachable (%s); retry %d in %.2fs", self.endpoint, exc, attempt + 1, delay)
                time.sleep(delay)
                attempt += 1

    def _check_complete(self, headers: Mapping[str, str]) -> None:
        """Virtuoso answers 200 with partial results when one of its limits cut them; raise instead.

        ``X-SQL-State`` (e.g. ``S1TAT``, an anytime query stopped by ``MaxQueryExecutionTime``) and
        ``X-SPARQL-MaxRows`` (the result reached ``[SPARQL] ResultSetMaxRows``; Virtuoso sends it also when a
        LIMIT equals that maximum, which cannot be told apart from a cut) are Virtuoso's headers; other servers
        do not send them."""
        lower = {k.lower(): v for k, v in headers.items()}
        state = lower.get("x-sql-state", "")
        if state:
            raise SparqlError(f"SPARQL endpoint {self.endpoint} returned incomplete results ({state}: "
                              f"{lower.get('x-sql-message', '')}); raise its MaxQueryExecutionTime or simplify")
        max_rows = lower.get("x-sparql-maxrows", "")
        if max_rows:
            raise SparqlError(f"SPARQL endpoint {self.endpoint} cut the results at {max_rows} rows (Virtuoso "
                              "[SPARQL] ResultSetMaxRows in virtuoso.ini); raise it or ask for fewer rows")

    def select(self, query: str, timeout: float | None = None) -> list[Row]:
        result = self._request(query, timeout, SELECT)
        if not isinstance(result, dict) or "results" not in result:
            raise SparqlError(f"SPARQL endpoint {self.endpoint} returned no SELECT results")
        return [{k: _parse_term(v) for k, v in b.items()} for b in result["results"]["bindings"]]

    def ask(self, query: str, timeout: float | None = None) -> bool:
        result = self._request(query, timeout, ASK)
        if not isinstance(result, dict) or "boolean" not in result:
            raise SparqlError(f"SPARQL endpoint {self.endpoint} returned no ASK result")
        return bool(result["boolean"])

    def count_triples(self) -> int:
        rows = self.select("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }")
        return int(rows[0]["n"].value) if rows else 0

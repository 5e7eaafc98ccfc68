"""From ``kgrag prepare``'s options to a :class:`DatasetSpec`: an import of the user's files, a registered or
built-in dataset by name, or a graph on a SPARQL endpoint (probed, then registered; nothing is copied).

    spec = import_spec(settings, "mykg", [Path("kg.nt.gz")], [Path("q.jsonl")], "en", 1000)
"""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from kgrag.config import Settings
from kgrag.data.freebase import FREEBASE_NS
from kgrag.data.registry import dataset_spec, register
from kgrag.data.spec import BUILTIN_SPECS, DatasetSpec
from kgrag.errors import KgragError
from kgrag.graph.remote_store import RemoteStore

__all__ = ["import_spec", "register_endpoint"]


def _spec(**fields: object) -> DatasetSpec:
    try:
        return DatasetSpec(**fields)  # type: ignore[arg-type]
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(x) for x in error["loc"]) or "dataset"
        value = f" {error['input']!r}" if isinstance(error.get("input"), str) else ""
        hint = " (a name is 1-40 of a-z, 0-9, _ and -, starting with a letter or digit)" if where == "name" else ""
        raise KgragError(f"invalid {where}{value}: {error['msg']}{hint}") from None


def _absolute(paths: list[Path]) -> tuple[str, ...]:
    return tuple(str(p.expanduser().resolve()) for p in paths)


def import_spec(settings: Settings, name: str, triples: list[Path], questions: list[Path], lang: str,
                max_bad_lines: int, store: bool = True, alias_predicates: list[str] | None = None) -> DatasetSpec:
    """The spec ``kgrag prepare`` prepares: new files → an import; none → the dataset registered as ``name``
    (``--questions`` alone replaces a registered import's questions). ``alias_predicates``: the graph's own
    other-name predicates (IRIs), with ``triples`` only."""
    if triples:
        if name in BUILTIN_SPECS:
            raise KgragError(f"{name!r} is a built-in dataset: import your graph under another --dataset name")
        return _spec(name=name, reader="triples", triples=_absolute(triples), questions=_absolute(questions),
                     lang=lang, max_bad_lines=max_bad_lines, store=store,
                     alias_predicates=tuple(dict.fromkeys(alias_predicates or ())))
    if alias_predicates:
        raise KgragError("--alias-predicate needs --triples (it says how to read your graph's files)")
    spec = dataset_spec(name, settings)
    if questions:
        if spec.reader != "triples":
            raise KgragError(f"--questions needs --triples for {name!r} (a built-in or endpoint dataset reads its "
                             "own questions)")
        return spec.model_copy(update={"questions": _absolute(questions)})
    return spec


def register_endpoint(settings: Settings, name: str, endpoint: str, graph: str | None, namespace: str | None,
                      lang: str, questions: list[Path]) -> DatasetSpec:
    """Probe ``endpoint`` (one triple must come back) and register it as dataset ``name``."""
    if name in BUILTIN_SPECS:
        raise KgragError(f"{name!r} is a built-in dataset: register the endpoint under another --dataset name")
    if not endpoint.startswith(("http://", "https://")):
        raise KgragError(f"--endpoint must be an http(s) URL, got {endpoint!r}")
    for path in questions:
        if not path.is_file():
            raise KgragError(f"question file not found: {path}")
    spec = _spec(name=name, reader="endpoint", endpoint=endpoint, graph=graph, namespace=namespace or FREEBASE_NS,
                 lang=lang, questions=_absolute(questions))
    store = RemoteStore(endpoint, timeout=min(settings.sparql_timeout, 30.0), retries=1, graph=graph)
    try:
        rows = store.select("SELECT ?s WHERE { ?s ?p ?o } LIMIT 1")
    except KgragError as exc:
        raise KgragError(f"the endpoint {endpoint} did not answer: {exc}") from None
    finally:
        store.close()
    if not rows:
        where = f"graph {graph} of " if graph else ""
        raise KgragError(f"{where}{endpoint} holds no triple: nothing to register")
    register(spec, settings)
    return spec

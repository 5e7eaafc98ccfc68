"""A knowledge network written as a Turtle graph a new user might bring — the triple-KG twin of a database
network, so the same real questions can be asked of both kinds of graph (issue 49: "the same databases as RDF make
a triple-KG version of the corpus").

    text = network_turtle(network, instances, links)          # one Turtle document
    view = rdf_view(network, instances, links, tmp_path)        # written, imported as `kgrag prepare --triples` does

Contract: each object type is a class (``ex:class/<type id>`` with ``rdfs:label`` its name); each instance an
entity typed with its class, ``rdfs:label`` its display property's value when that is text (an id or a number is no
name: such a row has none); every non-empty data property (the display one too) a literal triple named by the property (integers as ``xsd:integer``, other numbers as
``xsd:decimal``, dates kept as text, the rest plain strings); each link a triple named by its relation type's id.
Ids are percent-free slugs, so any network writes valid Turtle. :func:`rdf_view` imports the document through the
product's reader (:func:`kgrag.data.triples.read_triple_files` → :func:`kgrag.graph.imported.imported_csr`, as
``kgrag prepare --triples`` does) and views it with :func:`kgrag.reading.graph_tables.view_of_graph`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kgrag.graph.imported import imported_csr
from kgrag.network.schema.model import Instance, KnowledgeNetwork, Link
from kgrag.reading.graph_tables import GraphView, view_of_graph

__all__ = ["network_turtle", "rdf_view"]

_SLUG = re.compile(r"[^0-9A-Za-z_-]+")
_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")


def _slug(text: str) -> str:
    return _SLUG.sub("_", str(text)).strip("_") or "x"


def _literal(value: Any) -> str | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        return f'"{str(value).lower()}"'
    if isinstance(value, int) or isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return f'"{int(value)}"^^xsd:integer'
    if isinstance(value, float):
        return f'"{value!r}"^^xsd:decimal' if math.isfinite(value) else None
    text = str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    return f'"{text}"'


def network_turtle(network: KnowledgeNetwork, instances: Iterable[Instance], links: Iterable[Link]) -> str:
    """The network as one Turtle document (see the module docstring)."""
    base = f"http://example.org/{_slug(network.kn_id)}/"
    lines = [f"@prefix ex: <{base}> .", "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .",
             "@prefix xsd: <http://www.w3.org/2001/XMLSchema#> ."]
    types = {ot.id: ot for ot in network.object_types}
    entity: dict[str, str] = {}
    for ot in network.object_types:
        label = _literal(ot.name or ot.id)
        lines.append(f"<{base}class/{_slug(ot.id)}> rdfs:label {label} .")
    for inst in instances:
        ot = types.get(inst.object_type_id)
        if ot is None:
            continue
        node = f"<{base}i/{_slug(inst.object_type_id)}/{_slug(inst.id)}>"
        entity[inst.id] = node
        parts = [f"a <{base}class/{_slug(ot.id)}>"]
        shown = inst.properties.get(ot.display_key)
        label = _literal(shown) if isinstance(shown, str) and not _NUMBER.fullmatch(shown.strip()) else None
        if label is not None:
            parts.append(f"rdfs:label {label}")
        for prop in ot.data_properties:
            value = _literal(inst.properties.get(prop.name))
            if value is not None:
                parts.append(f"<{base}p/{_slug(prop.name)}> {value}")
        lines.append(f"{node} " + " ;\n  ".join(parts) + " .")
    for link in links:
        src, tgt = entity.get(link.source_id), entity.get(link.target_id)
        if src is not None and tgt is not None:
            lines.append(f"{src} <{base}r/{_slug(link.relation_type_id)}> {tgt} .")
    return "\n".join(lines) + "\n"


def rdf_view(network: KnowledgeNetwork, instances: Iterable[Instance], links: Iterable[Link],
             folder: Path) -> GraphView | None:
    """The network written as Turtle under ``folder``, imported and viewed as tables."""
    from kgrag.data.triples import read_triple_files

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{_slug(network.kn_id)}.ttl"
    path.write_text(network_turtle(network, instances, links), encoding="utf-8")
    arrays = read_triple_files([path], lang="en")
    graph = imported_csr(arrays, _slug(network.kn_id), f"http://example.org/kgrag/{_slug(network.kn_id)}/ns/", "en")
    return view_of_graph(graph)

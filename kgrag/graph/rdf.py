"""Export a triple graph as N-Triples under its dataset namespace (see :mod:`kgrag.graph.iri`)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from kgrag.data.records import KGDataset
from kgrag.graph.csr import CSRGraph
from kgrag.graph.iri import NAME_PREDICATE, VALUE_PREDICATE, XSD
from kgrag.graph.sparql import escape_string


def ntriples_lines(graph: CSRGraph, kg: KGDataset | None = None, name_lang: str | None = None,
                   literal_types: dict[str, str] | None = None) -> Iterator[str]:
    """Edges, then one ``type.object.name`` literal per named entity, then typed value literals (an entity whose
    name is a value: its name as a literal of its XSD type). ``kg`` gives the name language and the literal types,
    else ``name_lang`` / ``literal_types`` (entity key -> XSD local type) do."""
    lang = name_lang or (kg.name_lang if kg is not None else "en")
    literal_types = literal_types if literal_types is not None else (kg.literal_types if kg is not None else {})
    base = graph.iri_base
    ent = [f"<{base}{i}>" for i in graph.entity_ids]
    rel = [f"<{base}{r}>" for r in graph.relations]
    for h, r, t in zip(graph.head.tolist(), graph.rel.tolist(), graph.tail.tolist(), strict=True):
        yield f"{ent[h]} {rel[r]} {ent[t]} .\n"
    name_p = f"<{base}{NAME_PREDICATE}>"
    for term, name in zip(ent, graph.entity_names, strict=True):
        if name:
            yield f'{term} {name_p} "{escape_string(name)}"@{lang} .\n'
    value_p = f"<{base}{VALUE_PREDICATE}>"
    index = graph.key_index
    for key, xsd_type in sorted(literal_types.items()):
        row = index.get(key)
        if row is not None:
            value = graph.entity_names[row] or key
            yield f'{ent[row]} {value_p} "{escape_string(value)}"^^<{XSD}{xsd_type}> .\n'


def write_ntriples(graph: CSRGraph, kg: KGDataset | None, path: Path, name_lang: str | None = None,
                   literal_types: dict[str, str] | None = None) -> int:
    """Write the N-Triples file atomically; returns the number of lines (RDF triples)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    count = 0
    with open(tmp, "w", encoding="utf-8") as fh:
        buffer: list[str] = []
        for line in ntriples_lines(graph, kg, name_lang, literal_types):
            buffer.append(line)
            if len(buffer) >= 50_000:
                fh.writelines(buffer)
                count += len(buffer)
                buffer.clear()
        fh.writelines(buffer)
        count += len(buffer)
    os.replace(tmp, path)
    return count

"""Write the invented worlds (:mod:`bench.worlds`) as files a new user would bring: Turtle with readable predicates in
three styles, Wikidata-style and Freebase-shaped exports, and a YAML/CSV network.

    python -m bench.user_graphs --out /tmp/user-graphs    # one file (or folder) per graph; prints the triple counts

:data:`GRAPHS` names each graph, its world, how it is written and its part: ``dev`` (tune on it) or ``holdout`` (run
once). Styles:

* ``camel`` (scientists): ``ex:bornIn``, ``rdf:type ex:Scientist``, ``rdfs:label``, ``skos:altLabel``,
  ``ex:birthDate "…"^^xsd:date``, ``xsd:gYear`` years, ``xsd:integer`` populations.
* ``schema`` (bands): schema.org — ``schema:name``, ``schema:alternateName``, ``schema:byArtist``,
  ``schema:datePublished "1971"^^xsd:gYear``, ``rdf:type schema:MusicGroup``.
* ``snake`` (rivers): ``geo:flows_through``, ``geo:length_km``, ``geo:first_ascent "…"^^xsd:dateTime``,
  ``skos:prefLabel`` names.
* ``wikidata`` (a twin of scientists and of rivers): opaque ``wd:Q…`` ids, ``wdt:P…`` properties, ``rdfs:label`` on
  entities and on properties, ``wd:P… wikibase:directClaim wdt:P…``, ``wdt:P31`` types, ``skos:altLabel``.
* ``freebase`` (bands): MIDs, ``type.object.name``, ``type.object.type`` and ``common.topic.notable_types`` to named
  type nodes, ``common.topic.alias``, band membership through unnamed CVT nodes, albums linked both ways.
* ``network`` (courses): ``courses.yaml`` + CSV files in the format of ``examples/library``.

Every file is written the same, byte for byte, on each run (ids are drawn from seeded generators).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml

from bench.worlds import World, bands_world, courses_world, rivers_world, scientists_world

__all__ = ["GRAPHS", "Graph", "vocabulary", "write_all", "write_graph"]

XSD = "http://www.w3.org/2001/XMLSchema#"
_LIT_TYPES = {"date": "date", "gYear": "gYear", "dateTime": "dateTime", "integer": "integer", "decimal": "decimal"}


@dataclass(frozen=True)
class Graph:
    name: str
    world: Callable[[], World]
    style: str
    part: str  # dev | holdout


GRAPHS: dict[str, Graph] = {g.name: g for g in (
    Graph("scientists", scientists_world, "camel", "dev"),
    Graph("scientists_wd", scientists_world, "wikidata", "dev"),
    Graph("bands", bands_world, "schema", "holdout"),
    Graph("bands_fb", bands_world, "freebase", "holdout"),
    Graph("rivers", rivers_world, "snake", "holdout"),
    Graph("rivers_wd", rivers_world, "wikidata", "holdout"),
    Graph("courses", courses_world, "network", "holdout"),
)}

# abstract relation / attribute -> (local name per readable style)
_CAMEL = {"born_in": "bornIn", "educated_at": "educatedAt", "won_prize": "wonPrize", "field": "researchField",
          "located_in": "locatedIn", "in_country": "inCountry", "birth_date": "birthDate", "founded": "founded",
          "established": "established", "population": "population"}
_SCHEMA = {"formed_in": "foundingLocation", "genre": "genre", "member": "member", "by_artist": "byArtist",
           "record_label": "recordLabel", "label_city": "location", "in_country": "containedInPlace",
           "formed": "foundingDate", "released": "datePublished", "founded": "foundingDate",
           "birth_date": "birthDate", "tracks": "numTracks"}
_SCHEMA_TYPES = {"Band": "MusicGroup", "Album": "MusicAlbum", "Musician": "Person", "Label": "Organization",
                 "City": "City", "Country": "Country", "Genre": "DefinedTerm"}
_SNAKE = {"flows_through": "flows_through", "mountain_in": "located_in", "part_of_range": "part_of_range",
          "on_continent": "on_continent", "capital": "capital", "city_in": "in_country", "length_km": "length_km",
          "height_m": "height_m", "first_ascent": "first_ascent", "population": "population", "area_km2": "area_km2"}
# Wikidata-style: relation / attribute -> (property id, its English label)
_WIKIDATA = {
    "born_in": ("P19", "place of birth"), "educated_at": ("P69", "educated at"),
    "won_prize": ("P166", "award received"), "field": ("P101", "field of work"),
    "located_in": ("P131", "located in the administrative territorial entity"), "in_country": ("P17", "country"),
    "birth_date": ("P569", "date of birth"), "founded": ("P571", "inception"), "established": ("P571", "inception"),
    "population": ("P1082", "population"),
    "flows_through": ("P17", "country"), "mountain_in": ("P131", "located in the administrative territorial entity"),
    "part_of_range": ("P4552", "mountain range"), "on_continent": ("P30", "continent"), "capital": ("P36", "capital"),
    "city_in": ("P1376", "capital of"), "length_km": ("P2043", "length"),
    "height_m": ("P2044", "elevation above sea level"), "first_ascent": ("P8848", "date of first ascent"),
    "area_km2": ("P2046", "area"),
}
_WIKIDATA_TYPES = {"Scientist": "human", "City": "city", "Country": "country", "University": "university",
                   "Prize": "science award", "Field": "academic discipline", "River": "river", "Mountain": "mountain",
                   "Range": "mountain range", "Continent": "continent"}
_FREEBASE = {"formed_in": "music.artist.origin", "genre": "music.artist.genre", "by_artist": "music.album.artist",
             "record_label": "music.album.record_label", "label_city": "organization.organization.place_founded",
             "in_country": "location.location.containedby", "formed": "music.artist.active_start",
             "released": "music.album.release_date", "founded": "organization.organization.date_founded",
             "birth_date": "people.person.date_of_birth", "tracks": "music.album.track_count"}
_FREEBASE_TYPES = {"Band": ("music.musical_group", "Musical Group"), "Album": ("music.album", "Musical Album"),
                   "Musician": ("people.person", "Person"), "Label": ("music.record_label", "Record label"),
                   "City": ("location.citytown", "City/Town"), "Country": ("location.country", "Country"),
                   "Genre": ("music.genre", "Musical genre")}


def _q(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _literal(value: object, kind: str) -> str:
    if kind in ("integer", "decimal"):
        return _q(str(value)) + f"^^<{XSD}{kind}>"
    return _q(str(value)) + f"^^<{XSD}{_LIT_TYPES[kind]}>"


def _camel_id(node_id: str) -> str:
    return "".join(part.capitalize() for part in node_id.split("_")[1:]) or node_id


def _readable(world: World, style: str) -> str:
    """Turtle with readable predicates (``camel``, ``schema`` or ``snake``)."""
    if style == "camel":
        base, pred, vocab = "http://example.org/science/", "ex:", _CAMEL
        head = "@prefix ex: <http://example.org/science/> ."
        name_p, alt_p = "rdfs:label", "skos:altLabel"

        def iri(n: str) -> str:
            return f"ex:{_camel_id(n)}"

        def type_iri(t: str) -> str:
            return f"ex:{t}"
    elif style == "schema":
        base, pred, vocab = "http://example.org/music/", "schema:", _SCHEMA
        head = "@prefix mu: <http://example.org/music/> ."
        name_p, alt_p = "schema:name", "schema:alternateName"

        def iri(n: str) -> str:
            return f"mu:{n}"

        def type_iri(t: str) -> str:
            return f"schema:{_SCHEMA_TYPES[t]}"
    else:
        base, pred, vocab = "http://example.org/geo/", "geo:", _SNAKE
        head = "@prefix geo: <http://example.org/geo/> ."
        name_p, alt_p = "skos:prefLabel", "skos:altLabel"

        def iri(n: str) -> str:
            return f"geo:{n}"

        def type_iri(t: str) -> str:
            return f"geo:{t}"
    del base
    lines = [head, "@prefix rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#> .",
             "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .",
             "@prefix skos: <http://www.w3.org/2004/02/skos/core#> .",
             "@prefix schema: <http://schema.org/> .", f"@prefix xsd: <{XSD}> .", ""]
    out_edges: dict[str, list[tuple[str, str]]] = {}
    for h, r, t in world.edges:
        out_edges.setdefault(h, []).append((r, t))
    for node in world.nodes.values():
        parts = [f"rdf:type {type_iri(node.type)}", f"{name_p} {_q(node.name)}@en"]
        parts += [f"{alt_p} {_q(a)}@en" for a in node.alt]
        for attr, value in node.attrs.items():
            kind = world.attr_types[attr]
            parts.append(f"{pred}{vocab[attr]} " + _q(str(value)) + f"^^xsd:{_LIT_TYPES[kind]}")
        parts += [f"{pred}{vocab[r]} {iri(t)}" for r, t in out_edges.get(node.id, [])]
        lines.append(f"{iri(node.id)} " + " ;\n    ".join(parts) + " .")
    return "\n".join(lines) + "\n"


def _ids(world: World, prefix: str, low: int, high: int) -> dict[str, str]:
    rng = random.Random(f"{world.name}:{prefix}")
    numbers = rng.sample(range(low, high), len(world.nodes) + 16)
    return {n: f"{prefix}{numbers[i]}" for i, n in enumerate(world.nodes)}


def _wikidata(world: World) -> str:
    ids = _ids(world, "Q", 100_000, 9_999_999)
    type_ids = {t: f"Q{n}" for t, n in zip(sorted(_WIKIDATA_TYPES), random.Random(f"{world.name}:types").sample(
        range(100, 99_999), len(_WIKIDATA_TYPES)), strict=True)}
    type_ids["Scientist"] = "Q5"
    lines = ["@prefix wd: <http://www.wikidata.org/entity/> .", "@prefix wdt: <http://www.wikidata.org/prop/direct/> .",
             "@prefix wikibase: <http://wikiba.se/ontology#> .",
             "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .",
             "@prefix skos: <http://www.w3.org/2004/02/skos/core#> .", f"@prefix xsd: <{XSD}> .", ""]
    used = {r for _, r, _ in world.edges} | {a for n in world.nodes.values() for a in n.attrs}
    props = sorted({_WIKIDATA[k] for k in used} | {("P31", "instance of")}, key=lambda p: int(p[0][1:]))
    for pid, label in props:
        lines.append(f"wd:{pid} rdfs:label {_q(label)}@en ; wikibase:directClaim wdt:{pid} .")
    for t in sorted({n.type for n in world.nodes.values()}):
        lines.append(f"wd:{type_ids[t]} rdfs:label {_q(_WIKIDATA_TYPES[t])}@en .")
    out_edges: dict[str, list[tuple[str, str]]] = {}
    for h, r, t in world.edges:
        out_edges.setdefault(h, []).append((r, t))
    for node in world.nodes.values():
        parts = [f"rdfs:label {_q(node.name)}@en", f"wdt:P31 wd:{type_ids[node.type]}"]
        parts += [f"skos:altLabel {_q(a)}@en" for a in node.alt]
        for attr, value in node.attrs.items():
            parts.append(f"wdt:{_WIKIDATA[attr][0]} " + _q(str(value)) + f"^^xsd:{_LIT_TYPES[world.attr_types[attr]]}")
        parts += [f"wdt:{_WIKIDATA[r][0]} wd:{ids[t]}" for r, t in out_edges.get(node.id, [])]
        lines.append(f"wd:{ids[node.id]} " + " ;\n    ".join(parts) + " .")
    return "\n".join(lines) + "\n"


def _mids(world: World, salt: str, count: int) -> list[str]:
    rng = random.Random(f"{world.name}:{salt}")
    alphabet = "0123456789bcdfghjklmnpqrstvwxyz_"
    out, seen = [], set()
    while len(out) < count:
        mid = "m.0" + "".join(rng.choice(alphabet) for _ in range(rng.randint(4, 6)))
        if mid not in seen:
            seen.add(mid)
            out.append(mid)
    return out


def _freebase(world: World) -> str:
    """N-Triples in Freebase shape (see the module docstring)."""
    ns = "http://rdf.freebase.com/ns/"
    mids = dict(zip(world.nodes, _mids(world, "mids", len(world.nodes)), strict=True))
    cvts = iter(_mids(world, "cvts", len(world.edges)))

    def t(s: str, p: str, o: str) -> str:
        return f"<{ns}{s}> <{ns}{p}> {o} ."

    lines = []
    for type_id, label in sorted(_FREEBASE_TYPES.values()):
        lines.append(t(type_id, "type.object.name", _q(label) + "@en"))
        lines.append(t(type_id, "type.object.type", f"<{ns}type.type>"))
    for node in world.nodes.values():
        mid = mids[node.id]
        type_id = _FREEBASE_TYPES[node.type][0]
        lines += [t(mid, "type.object.name", _q(node.name) + "@en"), t(mid, "type.object.type", f"<{ns}{type_id}>"),
                  t(mid, "common.topic.notable_types", f"<{ns}{type_id}>")]
        lines += [t(mid, "common.topic.alias", _q(a) + "@en") for a in node.alt]
        for attr, value in node.attrs.items():
            lines.append(t(mid, _FREEBASE[attr], _literal(value, world.attr_types[attr])))
    for h, r, tail in world.edges:
        if r == "member":  # a membership CVT: band -> CVT -> musician
            cvt = next(cvts)
            lines += [t(mids[h], "music.musical_group.member", f"<{ns}{cvt}>"),
                      t(cvt, "music.group_membership.member", f"<{ns}{mids[tail]}>"),
                      t(cvt, "music.group_membership.group", f"<{ns}{mids[h]}>")]
            continue
        lines.append(t(mids[h], _FREEBASE[r], f"<{ns}{mids[tail]}>"))
        if r == "by_artist":  # Freebase keeps this pair both ways
            lines.append(t(mids[tail], "music.artist.album", f"<{ns}{mids[h]}>"))
    return "\n".join(lines) + "\n"


def _network(world: World, folder: Path) -> Path:
    """``<world>.yaml`` + one CSV per object type + ``links.csv``; integer and date properties declared."""
    folder.mkdir(parents=True, exist_ok=True)
    by_type: dict[str, list] = {}
    for node in world.nodes.values():
        by_type.setdefault(node.type, []).append(node)
    object_types, instances = [], []
    for type_id, nodes in sorted(by_type.items()):
        attrs = sorted({a for n in nodes for a in n.attrs})
        props = [{"name": "name", "type": "string", "condition_operations": ["knn", "match", "==", "prefix"]}]
        for a in attrs:
            kind = world.attr_types[a]
            props.append({"name": a, "display_name": a.replace("_", " "),
                          "type": "date" if kind == "date" else "integer",
                          "condition_operations": ["==", ">", "<", "range"]})
        object_types.append({"id": type_id, "name": type_id.lower(), "comment": f"a {type_id.lower()}",
                             "display_key": "name", "data_properties": props})
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(["id", "name", *attrs])
        for n in nodes:
            writer.writerow([n.id, n.name, *(n.attrs.get(a, "") for a in attrs)])
        file = f"{type_id.lower()}s.csv"
        (folder / file).write_text(buf.getvalue(), encoding="utf-8")
        instances.append({"object_type": type_id, "file": file})
    rel_types = {}
    for h, r, t in world.edges:
        rel_types.setdefault(r, (world.nodes[h].type, world.nodes[t].type))
    relation_types = [{"id": r, "name": r.replace("_", " "), "comment": f"{s.lower()} {r.replace('_', ' ')} "
                       f"{t.lower()}", "source_object_type_id": s, "target_object_type_id": t}
                      for r, (s, t) in sorted(rel_types.items())]
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["relation_type_id", "source_id", "target_id"])
    writer.writerows((r, h, t) for h, r, t in world.edges)
    (folder / "links.csv").write_text(buf.getvalue(), encoding="utf-8")
    schema = {"kn_id": world.name, "name": world.name.capitalize(), "comment": f"the invented {world.name} network",
              "object_types": object_types, "relation_types": relation_types, "action_types": [],
              "data": {"instances": instances, "links": [{"file": "links.csv"}]}}
    path = folder / f"{world.name}.yaml"
    path.write_text(yaml.safe_dump(schema, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


def vocabulary(name: str) -> tuple[dict[str, str], str]:
    """How graph ``name`` (a Turtle style) spells things: ``({relation or attribute: predicate IRI}, name IRI)``."""
    style = GRAPHS[name].style
    if style == "wikidata":
        return ({k: f"http://www.wikidata.org/prop/direct/{pid}" for k, (pid, _) in _WIKIDATA.items()},
                "http://www.w3.org/2000/01/rdf-schema#label")
    base, vocab, label = {
        "camel": ("http://example.org/science/", _CAMEL, "http://www.w3.org/2000/01/rdf-schema#label"),
        "schema": ("http://schema.org/", _SCHEMA, "http://schema.org/name"),
        "snake": ("http://example.org/geo/", _SNAKE, "http://www.w3.org/2004/02/skos/core#prefLabel"),
    }[style]
    return {k: base + v for k, v in vocab.items()}, label


def write_graph(name: str, folder: Path) -> Path:
    """Write graph ``name`` under ``folder``: the file to pass to ``kgrag prepare --triples`` (RDF) or the schema
    file for ``kgrag kn load`` (a network)."""
    graph = GRAPHS[name]
    world = graph.world()
    folder.mkdir(parents=True, exist_ok=True)
    if graph.style == "network":
        return _network(world, folder / name)
    if graph.style == "freebase":
        path, text = folder / f"{name}.nt", _freebase(world)
    elif graph.style == "wikidata":
        path, text = folder / f"{name}.ttl", _wikidata(world)
    else:
        path, text = folder / f"{name}.ttl", _readable(world, graph.style)
    path.write_text(text, encoding="utf-8")
    return path


def write_all(folder: Path) -> dict[str, Path]:
    return {name: write_graph(name, folder) for name in GRAPHS}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    import pyoxigraph

    for name, path in write_all(args.out).items():
        if path.suffix == ".yaml":
            print(f"{name}: {path}")
            continue
        store = pyoxigraph.Store()
        fmt = pyoxigraph.RdfFormat.N_TRIPLES if path.suffix == ".nt" else pyoxigraph.RdfFormat.TURTLE
        store.load(path=str(path), format=fmt)
        print(f"{name}: {path} ({len(store)} triples, sha1 {hashlib.sha1(path.read_bytes()).hexdigest()[:10]})")


if __name__ == "__main__":
    main()

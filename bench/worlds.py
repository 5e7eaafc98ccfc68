"""Small invented worlds, as plain data, that the benchmark writes out as a new user's graph files and asks
structured questions about.

    world = scientists_world(); len(world.nodes), len(world.edges)   # deterministic: the same world every call

A :class:`World` is typed, named nodes (with other names and literal attributes) and relation edges between them,
keyed by abstract relation names (``born_in``); how a relation or attribute is spelled in a file (``ex:bornIn``,
``schema:birthPlace``, ``wdt:P19``, ``people.person.place_of_birth``) is the writers' business
(:mod:`bench.user_graphs`). Every fact is invented, drawn from one ``random.Random`` per world; only the place
names are real. Worlds: ``scientists`` (the dev domain), ``bands``, ``rivers`` and ``courses`` (held-out domains).
:func:`world_from_network` and :func:`world_from_kg` read an existing network's or triple graph's data into the
same shape, so the question generator walks every graph the same way.
"""

from __future__ import annotations

import itertools
import random
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Node", "World", "bands_world", "courses_world", "rivers_world", "scientists_world", "world_from_kg",
           "world_from_network"]

Value = int | float | str


@dataclass
class Node:
    id: str
    type: str
    name: str
    alt: tuple[str, ...] = ()
    attrs: dict[str, Value] = field(default_factory=dict)


@dataclass
class World:
    """Nodes by id and ``(head, relation, tail)`` edges; ``attr_types`` gives each attribute's value kind
    (``date``, ``gYear``, ``dateTime``, ``integer``, ``decimal``)."""

    name: str
    nodes: dict[str, Node]
    edges: list[tuple[str, str, str]]
    attr_types: dict[str, str] = field(default_factory=dict)
    person_types: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        self._out: dict[tuple[str, str], list[str]] = defaultdict(list)
        self._in: dict[tuple[str, str], list[str]] = defaultdict(list)
        for h, r, t in self.edges:
            self._out[(h, r)].append(t)
            self._in[(t, r)].append(h)

    def step(self, nodes: Iterable[str], relation: str) -> set[str]:
        """Nodes one edge away: ``relation`` followed forwards, ``^relation`` backwards."""
        index, rel = (self._in, relation[1:]) if relation.startswith("^") else (self._out, relation)
        return {n for node in nodes for n in index.get((node, rel), ())}

    def reach(self, start: str, path: Iterable[str]) -> set[str]:
        frontier = {start}
        for relation in path:
            frontier = self.step(frontier, relation)
        return frontier

    def of_type(self, type_: str) -> list[str]:
        return sorted((n.id for n in self.nodes.values() if n.type == type_ and n.name), key=lambda i: (
            self.nodes[i].name, i))

    def value(self, node: str, attr: str) -> Value | None:
        """An attribute's value; ``@relation``: the name of the one node that relation reaches (a year node)."""
        if attr.startswith("@"):
            reached = sorted(self.step([node], attr[1:]))
            return self.nodes[reached[0]].name if len(reached) == 1 and reached[0] in self.nodes else None
        return self.nodes[node].attrs.get(attr)

    def relations(self) -> list[str]:
        return sorted({r for _, r, _ in self.edges})


class _Maker:
    """Ids, unique names and the edge list of a world being built."""

    def __init__(self, name: str, seed: int) -> None:
        self.rng = random.Random(f"{name}:{seed}")
        self.nodes: dict[str, Node] = {}
        self.edges: list[tuple[str, str, str]] = []

    def node(self, type_: str, name: str, **attrs: Value) -> str:
        slug = "".join(c if c.isalnum() else "_" for c in name.lower()).strip("_")
        node_id = f"{type_.lower()}_{slug}"
        assert node_id not in self.nodes, node_id
        self.nodes[node_id] = Node(node_id, type_, name, attrs=dict(attrs))
        return node_id

    def edge(self, head: str, relation: str, tail: str) -> None:
        if (head, relation, tail) not in self.edges:
            self.edges.append((head, relation, tail))

    def date(self, y0: int, y1: int) -> str:
        return f"{self.rng.randint(y0, y1)}-{self.rng.randint(1, 12):02d}-{self.rng.randint(1, 28):02d}"

    def people(self, firsts: tuple[str, ...], surnames: tuple[str, ...], n: int) -> list[str]:
        """``n`` full names with distinct surnames."""
        picked = self.rng.sample(surnames, n)
        return [f"{self.rng.choice(firsts)} {s}" for s in picked]


_FIRST = ("Ada", "Bruno", "Clara", "Dmitri", "Elena", "Felix", "Greta", "Hugo", "Irene", "Jonas", "Katya", "Lars",
          "Mira", "Nils", "Olga", "Pavel", "Rosa", "Stefan", "Tilde", "Viktor", "Wanda", "Yusuf", "Zofia", "Emil")
_SURNAMES = ("Abernathy", "Brandvold", "Castellane", "Delmonte", "Eskildsen", "Farrowby", "Gulbrandsen", "Hallorann",
             "Ingersoll", "Jarnefelt", "Kovalenko", "Lindqvist", "Marchetti", "Nordahl", "Oyelaran", "Pettersen",
             "Quennell", "Rasmussen", "Strathmore", "Tavernier", "Ulvaeus", "Vasquez", "Whitcombe", "Yamashiro",
             "Zelenko", "Achterberg", "Bellweather", "Carrington", "Drummond", "Ellingsen", "Falkenrath",
             "Grimaldi", "Hawthorne", "Iversen", "Kettering", "Lowenthal", "Montclair", "Nakashima", "Ostrova",
             "Pemberton", "Ravenscroft", "Sundqvist", "Thorvaldsen", "Underhill", "Valcourt", "Westergaard")


def scientists_world(seed: int = 0) -> World:
    """Scientists, the prizes they won, where they were born and studied; cities in countries (the dev domain)."""
    m = _Maker("scientists", seed)
    countries = {c: m.node("Country", c) for c in ("Sweden", "Italy", "Poland", "Canada", "Japan", "Brazil", "Kenya")}
    city_of = {"Uppsala": "Sweden", "Gothenburg": "Sweden", "Turin": "Italy", "Bologna": "Italy",
               "Krakow": "Poland", "Gdansk": "Poland", "Montreal": "Canada", "Halifax": "Canada",
               "Kyoto": "Japan", "Sendai": "Japan", "Recife": "Brazil", "Curitiba": "Brazil",
               "Mombasa": "Kenya", "Kisumu": "Kenya"}
    cities = {}
    for city, country in city_of.items():
        cities[city] = m.node("City", city, population=m.rng.randrange(80_000, 2_500_000, 1000))
        m.edge(cities[city], "in_country", countries[country])
    unis = {}
    for name, city in (("Royal Institute of Uppsala", "Uppsala"), ("University of Turin", "Turin"),
                       ("Jagiellonian Academy", "Krakow"), ("McAllister University", "Montreal"),
                       ("Kyoto Institute of Science", "Kyoto"), ("Federal University of Recife", "Recife"),
                       ("Bologna Polytechnic", "Bologna"), ("Gdansk Technical College", "Gdansk"),
                       ("Sendai Imperial University", "Sendai"), ("Mombasa College of Science", "Mombasa")):
        unis[name] = m.node("University", name, founded=str(m.rng.randint(1300, 1960)))
        m.edge(unis[name], "located_in", cities[city])
    prizes = [m.node("Prize", p, established=str(m.rng.randint(1880, 1975))) for p in (
        "Halvard Medal", "Corwin Prize", "Aster Prize for Chemistry", "Lumen Award", "Marbury Medal",
        "Kestrel Prize", "Ostrander Prize", "Veyne Award")]
    fields = [m.node("Field", f) for f in ("Physics", "Chemistry", "Mathematics", "Biology", "Astronomy", "Geology")]
    winners: dict[str, int] = defaultdict(int)
    for i, full in enumerate(m.people(_FIRST, _SURNAMES, 30)):
        s = m.node("Scientist", full, birth_date=m.date(1822, 1972))
        if i % 4 == 0:
            m.nodes[s].alt = (f"{full[0]}. {full.split()[1]}",)
        m.edge(s, "born_in", cities[m.rng.choice(list(cities))])
        for u in m.rng.sample(list(unis.values()), m.rng.choice((1, 1, 2))):
            m.edge(s, "educated_at", u)
        m.edge(s, "field", m.rng.choice(fields))
        pool = sorted(prizes, key=lambda p: (winners[p], m.rng.random()))
        for p in pool[: m.rng.choice((0, 1, 1, 2, 2, 3))]:
            m.edge(s, "won_prize", p)
            winners[p] += 1
    return World("scientists", m.nodes, m.edges,
                 {"birth_date": "date", "founded": "gYear", "established": "gYear", "population": "integer"},
                 frozenset({"Scientist"}))


def bands_world(seed: int = 0) -> World:
    """Bands, their members, albums and record labels; cities in countries (a held-out domain)."""
    m = _Maker("bands", seed)
    countries = {c: m.node("Country", c) for c in ("Ireland", "Norway", "Australia", "Mexico", "Germany", "Chile")}
    city_of = {"Dublin": "Ireland", "Cork": "Ireland", "Bergen": "Norway", "Oslo": "Norway",
               "Melbourne": "Australia", "Perth": "Australia", "Monterrey": "Mexico", "Guadalajara": "Mexico",
               "Hamburg": "Germany", "Valparaiso": "Chile"}
    cities = {}
    for city, country in city_of.items():
        cities[city] = m.node("City", city)
        m.edge(cities[city], "in_country", countries[country])
    labels = []
    for name in ("Copperline Records", "Northgate Music", "Blue Harbour Records", "Saltmarsh Sound",
                 "Ironbark Records", "Velvet Owl Music"):
        label = m.node("Label", name, founded=str(m.rng.randint(1950, 2005)))
        m.edge(label, "label_city", cities[m.rng.choice(list(cities))])
        labels.append(label)
    genres = [m.node("Genre", g) for g in ("Folk Rock", "Synthpop", "Post-Punk", "Jazz Fusion", "Shoegaze",
                                           "Bluegrass")]
    band_names = ("The Lantern Thieves", "Glass Meridian", "Harbour Saints", "The Quiet Engines", "Moth Parade",
                  "Northern Static", "Velvet Cartography", "The Paper Foxes", "Salt Circuit", "Echo Orchard",
                  "The Winter Mechanics", "Crimson Atlas", "Low Tide Choir", "The Amber Signals", "Foxglove Union",
                  "Silver Antler")
    members = iter(m.people(_FIRST, _SURNAMES, 40))
    album_words = list(itertools.product(("Midnight", "Hollow", "Golden", "Broken", "Distant", "Electric", "Paper",
                                          "Quiet", "Neon", "Iron"),
                                         ("Lights", "Rivers", "Maps", "Season", "Houses", "Signals", "Gardens",
                                          "Engines", "Tides", "Letters")))
    m.rng.shuffle(album_words)
    for i, name in enumerate(band_names):
        formed = m.rng.randint(1962, 2012)
        band = m.node("Band", name, formed=str(formed))
        if name.startswith("The "):
            m.nodes[band].alt = (name.removeprefix("The "),)
        m.edge(band, "formed_in", cities[m.rng.choice(list(cities))])
        for g in m.rng.sample(genres, m.rng.choice((1, 1, 2))):
            m.edge(band, "genre", g)
        for _ in range(2 if i % 2 else 3):
            person = next(members, None)
            if person is not None:
                p = m.node("Musician", person, birth_date=m.date(formed - 40, formed - 17))
                m.edge(band, "member", p)
        for k in range(m.rng.choice((1, 2, 3, 3))):
            a, b = album_words.pop()
            album = m.node("Album", f"{a} {b}", released=str(formed + 1 + 3 * k + m.rng.randint(0, 2)),
                           tracks=m.rng.randint(7, 16))
            m.edge(album, "by_artist", band)
            m.edge(album, "record_label", m.rng.choice(labels))
    return World("bands", m.nodes, m.edges, {"formed": "gYear", "released": "gYear", "founded": "gYear",
                                             "birth_date": "date", "tracks": "integer"}, frozenset({"Musician"}))


def rivers_world(seed: int = 0) -> World:
    """Rivers, mountains and the countries they are in, with lengths, heights and populations (a held-out domain)."""
    m = _Maker("rivers", seed)
    continents = {c: m.node("Continent", c) for c in ("Europe", "Africa", "South America")}
    country_rows = (("Austria", "Europe", "Vienna"), ("Switzerland", "Europe", "Bern"), ("Slovakia", "Europe",
                    "Bratislava"), ("Hungary", "Europe", "Budapest"), ("Tanzania", "Africa", "Dodoma"),
                    ("Uganda", "Africa", "Kampala"), ("Ethiopia", "Africa", "Addis Ababa"),
                    ("Peru", "South America", "Lima"), ("Bolivia", "South America", "Sucre"))
    countries = {}
    for country, continent, capital in country_rows:
        c = m.node("Country", country, population=m.rng.randrange(2_000_000, 120_000_000, 1000),
                   area_km2=m.rng.randrange(40_000, 1_300_000, 100))
        countries[country] = c
        m.edge(c, "on_continent", continents[continent])
        cap = m.node("City", capital, population=m.rng.randrange(200_000, 3_500_000, 1000))
        m.edge(c, "capital", cap)
        m.edge(cap, "city_in", c)
    by_continent = defaultdict(list)
    for country, continent, _ in country_rows:
        by_continent[continent].append(countries[country])
    rivers = ("Velna", "Ostra", "Marava", "Tulen", "Kessa", "Dravik", "Amaru", "Quillo", "Sabeni", "Rukwa Minor",
              "Lenzo", "Harnet", "Opalo", "Zambro")
    for name in rivers:
        r = m.node("River", name, length_km=m.rng.randint(90, 2900))
        continent = m.rng.choice(list(by_continent))
        for c in m.rng.sample(by_continent[continent], m.rng.choice((1, 2, 2, 3))):
            m.edge(r, "flows_through", c)
    ranges = {}
    for name, continent in (("Kestrel Range", "Europe"), ("Ardent Peaks", "Africa"), ("Cordillera Blanca Sur",
                                                                                      "South America"),
                            ("Tamsin Massif", "Europe")):
        ranges[name] = (m.node("Range", name), continent)
    peaks = ("Mount Aurel", "Grauhorn", "Piz Velna", "Kilemba", "Mount Sabor", "Nevado Quilla", "Cerro Amaru",
             "Hohe Wand Spitze", "Mount Tefera", "Ras Denbi", "Nevado Illari", "Mount Orlov", "Schwarzgipfel",
             "Mount Kivu Nord")
    for name in peaks:
        range_id, continent = ranges[m.rng.choice(list(ranges))]
        ascent = f"{m.rng.randint(1850, 1985)}-{m.rng.randint(1, 12):02d}-{m.rng.randint(1, 28):02d}T" \
                 f"{m.rng.randint(5, 17):02d}:{m.rng.choice((0, 15, 30, 45)):02d}:00"
        p = m.node("Mountain", name, height_m=m.rng.randint(1800, 6700), first_ascent=ascent)
        m.edge(p, "mountain_in", m.rng.choice(by_continent[continent]))
        m.edge(p, "part_of_range", range_id)
    return World("rivers", m.nodes, m.edges, {"population": "integer", "area_km2": "integer", "length_km": "integer",
                                              "height_m": "integer", "first_ascent": "dateTime"})


def courses_world(seed: int = 0) -> World:
    """Teachers, the courses they teach and their departments (a held-out network domain)."""
    m = _Maker("courses", seed)
    departments = [m.node("Department", d, founded=m.rng.randint(1890, 1995)) for d in (
        "Physics", "History", "Linguistics", "Economics", "Computer Science")]
    subjects = {
        "Physics": ("Classical Mechanics", "Quantum Theory", "Optics Lab", "Thermodynamics", "Astrophysics Seminar",
                    "Solid State Physics"),
        "History": ("Medieval Europe", "The Silk Road", "Modern Revolutions", "Ancient Rome", "History of Science"),
        "Linguistics": ("Phonetics", "Syntax I", "Historical Linguistics", "Semantics", "Field Methods"),
        "Economics": ("Microeconomics", "Game Theory", "Economic History", "Econometrics", "Public Finance",
                      "Labour Economics"),
        "Computer Science": ("Algorithms", "Databases", "Compilers", "Machine Learning", "Operating Systems",
                             "Computer Graphics"),
    }
    courses_of = {}
    for dept in departments:
        name = m.nodes[dept].name
        ids = []
        for title in subjects[name]:
            c = m.node("Course", title, credits=m.rng.choice((3, 4, 5, 6, 8)), first_offered=m.rng.randint(1950, 2021))
            m.edge(c, "offered_by", dept)
            ids.append(c)
        for later, earlier in zip(ids[1:], ids[:-1], strict=True):
            if m.rng.random() < 0.5:
                m.edge(later, "requires", earlier)
        courses_of[dept] = ids
    for full in m.people(_FIRST, _SURNAMES, 15):
        t = m.node("Teacher", full, birth_year=m.rng.randint(1945, 1992), hired_on=m.date(1985, 2022))
        dept = m.rng.choice(departments)
        m.edge(t, "works_in", dept)
        for c in m.rng.sample(courses_of[dept], m.rng.choice((1, 2, 2, 3))):
            m.edge(t, "teaches", c)
    return World("courses", m.nodes, m.edges, {"credits": "integer", "first_offered": "integer",
                                               "founded": "integer", "birth_year": "integer", "hired_on": "date"},
                 frozenset({"Teacher"}))


def world_from_network(name: str, network: Any, instances: Iterable[Any], links: Iterable[Any]) -> World:
    """A loaded network's data as a world: instances named by their type's display key, integer / float / date
    properties as attributes, links as edges keyed by relation type id."""
    types = {ot.id: ot for ot in network.object_types}
    nodes: dict[str, Node] = {}
    attr_types: dict[str, str] = {}
    for inst in instances:
        ot = types[inst.object_type_id]
        key = ot.display_key or "name"
        attrs: dict[str, Value] = {}
        for prop in ot.data_properties:
            value = inst.properties.get(prop.name)
            kind = {"integer": "integer", "int": "integer", "float": "decimal", "date": "date"}.get(prop.type)
            if kind and value is not None and prop.name != key:
                attrs[prop.name] = value
                attr_types[prop.name] = kind
        nodes[inst.id] = Node(inst.id, inst.object_type_id, str(inst.properties.get(key) or ""), attrs=attrs)
    edges = [(link.source_id, link.relation_type_id, link.target_id) for link in links]
    persons = frozenset(t for t in types if t.lower() in {"person", "author", "teacher", "scientist"})
    return World(name, nodes, edges, attr_types, persons)


def world_from_kg(name: str, kg: Any) -> World:
    """A triple graph's data (:class:`kgrag.data.records.KGDataset`) as a world: every triple an edge; named
    entities (years included, named by their value) and unnamed CVTs as nodes; a node's type is the name of its
    ``type.object.type`` target when it has one."""
    keys = {t.head for t in kg.triples} | {t.tail for t in kg.triples}
    type_of = {t.head: kg.names.get(t.tail, "") for t in kg.triples if t.relation == "type.object.type"}
    nodes = {k: Node(k, type_of.get(k, ""), kg.names.get(k, "")) for k in sorted(keys)}
    edges = [(t.head, t.relation, t.tail) for t in kg.triples]
    return World(name, nodes, edges, {}, frozenset({"Person"}))

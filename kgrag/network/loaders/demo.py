"""A small network derived from the demo KG (``kgrag.data.demo.demo_kg``): films, people, places, teams.

Each entity's object type is inferred from the relations it takes part in (``film.film.*`` heads are Films,
``people.person.*`` heads are Persons, the tail of ``film.film.genre`` is a Genre …; ``gYear`` values are
Years); unnamed CVT nodes become Performance / Marriage / PositionHeld / Roster instances. Each distinct
(relation, source type, target type) is a relation type; its id is the Freebase relation, suffixed with
``@<SourceType>`` when the relation links several type pairs (``location.location.containedby@City``), or
``@<SourceType>-><TargetType>`` when the source type alone does not tell them apart.
Metadata relations (``type.object.type``, ``common.topic.article``) are left out. Instance ids are the MIDs.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from kgrag.data.demo import demo_kg
from kgrag.network.loaders import NetworkData
from kgrag.network.schema.model import (
    DataProperty,
    Instance,
    KnowledgeNetwork,
    Link,
    ObjectType,
    RelationType,
    TextConfig,
)

__all__ = ["demo_network"]

_META = {"type.object.type", "common.topic.article"}
# head-relation prefix -> type of the head
_HEAD_RULES = (
    ("people.person.", "Person"), ("film.film.", "Film"), ("film.performance.", "Performance"),
    ("people.marriage.", "Marriage"), ("government.government_position_held.", "PositionHeld"),
    ("sports.sports_team_roster.", "Roster"), ("sports.sports_team.", "Team"), ("location.country.", "Country"),
)  # fmt: skip
# relation -> type of the tail
_TAIL_RULES = {
    "location.country.official_language": "Language", "film.film.language": "Language",
    "film.film.genre": "Genre", "people.person.gender": "Gender", "people.person.profession": "Profession",
    "film.performance.character": "Character", "government.government_position_held.basic_title": "Title",
    "sports.sports_team.sport": "Sport", "film.film.country": "Country", "people.person.nationality": "Country",
    "people.person.place_of_birth": "City", "sports.sports_team.location": "City",
}  # fmt: skip
_TYPE_COMMENTS = {
    "Person": "A person: film director, actor, politician or athlete",
    "Film": "A film with its director, genres, country, language and release year",
    "Performance": "A film performance (CVT): an actor playing a character in a film",
    "Marriage": "A marriage (CVT) between two spouses, with start and end years",
    "PositionHeld": "A government position held (CVT): office holder, title, jurisdiction, years",
    "Roster": "A sports team roster entry (CVT): player, team, from year",
    "Team": "A sports team, its city and sport",
    "Country": "A country: continent, official language, cities",
    "City": "A city and the country containing it",
    "Continent": "A continent",
    "Language": "A language",
    "Genre": "A film genre",
    "Gender": "A gender",
    "Profession": "A profession",
    "Character": "A film character",
    "Title": "A government office title such as President or Mayor",
    "Sport": "A sport",
    "Year": "A year (birth, release, start or end of a term)",
}
_CVT = {"Performance", "Marriage", "PositionHeld", "Roster"}
NAME_OPS = ["knn", "match", "==", "!=", "in", "prefix", "contain", "like", "regex", "exist"]


def _infer_types(kg) -> dict[str, str]:  # noqa: ANN001
    types: dict[str, str] = {key: "Year" for key, kind in kg.literal_types.items() if kind == "gYear"}
    triples = [t for t in kg.triples if t.relation not in _META]
    for t in triples:
        for prefix, type_id in _HEAD_RULES:
            if t.relation.startswith(prefix):
                types.setdefault(t.head, type_id)
                break
        tail_type = _TAIL_RULES.get(t.relation)
        if tail_type:
            types.setdefault(t.tail, tail_type)
    for t in triples:  # containment: city -> country -> continent
        if t.relation == "location.location.containedby" and types.get(t.tail) == "Country":
            types.setdefault(t.head, "City")
    for t in triples:
        if t.relation == "location.location.containedby" and types.get(t.head) == "Country":
            types.setdefault(t.tail, "Continent")
    return types


def _rel_name(relation: str) -> str:
    return relation.rsplit(".", 1)[-1].replace("_", " ")


def demo_network(kn_id: str = "demo", seed: int = 0) -> NetworkData:
    """The demo network (deterministic for a seed)."""
    kg = demo_kg(seed)
    types = _infer_types(kg)
    triples = [t for t in kg.triples if t.relation not in _META]
    missing = sorted({k for t in triples for k in (t.head, t.tail)} - set(types))
    if missing:
        raise ValueError(f"demo network: no object type inferred for {missing[:5]}")
    pairs: dict[str, Counter[tuple[str, str]]] = defaultdict(Counter)
    for t in triples:
        pairs[t.relation][(types[t.head], types[t.tail])] += 1
    rel_id: dict[tuple[str, str, str], str] = {}
    relation_types: list[RelationType] = []
    for relation in sorted(pairs):
        several = len(pairs[relation]) > 1
        by_source = len({src for src, _ in pairs[relation]}) == len(pairs[relation])
        for src, tgt in sorted(pairs[relation]):
            rid = (
                relation if not several else f"{relation}@{src}" if by_source else f"{relation}@{src}->{tgt}"
            )
            rel_id[(relation, src, tgt)] = rid
            relation_types.append(
                RelationType(
                    id=rid,
                    name=_rel_name(relation),
                    comment=f"{src} {_rel_name(relation)} {tgt} ({relation})",
                    source_object_type_id=src,
                    target_object_type_id=tgt,
                )
            )
    used = sorted(set(types.values()), key=list(_TYPE_COMMENTS).index)
    object_types = []
    for type_id in used:
        ops = ["==", "!=", "in", "prefix", "exist"] if type_id in _CVT else NAME_OPS
        props = [
            DataProperty(name="name", type="string", comment=f"{type_id} name", condition_operations=ops)
        ]
        if type_id == "Year":
            props.append(
                DataProperty(name="value", type="integer", condition_operations=["==", ">", "<", "range"])
            )
        if type_id in _DESCRIBED:
            props.append(DataProperty(name="description", type="text", comment=f"What the data says about the "
                                      f"{type_id.lower()}, written from its facts", condition_operations=[
                                          "match", "contain", "exist"]))
        object_types.append(
            ObjectType(
                id=type_id,
                name=type_id,
                comment=_TYPE_COMMENTS[type_id],
                data_properties=props,
                primary_keys=["name"],
                display_key="name",
            )
        )
    descriptions = _descriptions(triples, types, kg.names)
    instances = []
    for key in sorted(types):
        type_id = types[key]
        name = kg.names.get(key) or f"{type_id} {key}"
        props: dict[str, object] = {"name": name}
        if type_id in _DESCRIBED:
            props["description"] = descriptions.get(key, "")
        if type_id == "Year" and name.isdigit():
            props["value"] = int(name)
        instances.append(Instance(object_type_id=type_id, id=key, properties=props))
    links = [
        Link(
            relation_type_id=rel_id[(t.relation, types[t.head], types[t.tail])],
            source_id=t.head,
            target_id=t.tail,
        )
        for t in triples
    ]
    network = KnowledgeNetwork(
        kn_id=kn_id,
        name="Demo films and people",
        comment="A small fictional world in Freebase shape: films, people, places, teams",
        object_types=object_types,
        relation_types=relation_types,
        text=TextConfig(sections={t: ["description"] for t in used if t in _DESCRIBED},
                        descriptions={t: "description" for t in used if t in _DESCRIBED}, chunk_tokens=128,
                        overlap_tokens=16),
    )
    return network, instances, links


#: named types that get a ``description`` text (chunked for the query modes)
_DESCRIBED = ("Person", "Film", "Team", "Country", "City")


def _descriptions(triples, types: dict[str, str], names: dict[str, str]) -> dict[str, str]:  # noqa: ANN001
    """One sentence per fact an entity takes part in, written from the triples (a CVT's named members are one
    fact: "Performance: Ann Lee, Night Train, Captain Grey"); the text the demo network's chunks are made of."""
    sentences: dict[str, list[str]] = defaultdict(list)
    members: dict[str, list[tuple[str, str]]] = defaultdict(list)  # cvt -> (relation, named member)
    for t in triples:
        if types[t.head] in _CVT:
            members[t.head].append((t.relation, t.tail))
            continue
        if types[t.tail] in _CVT:
            members[t.tail].append((t.relation, t.head))
            continue
        head, tail = names.get(t.head, t.head), names.get(t.tail, t.tail)
        line = f"{head} {_rel_name(t.relation)} {tail}."
        sentences[t.head].append(line)
        sentences[t.tail].append(line)
    for cvt, parts in members.items():
        named = [(rel, key) for rel, key in parts if key in names]
        line = f"{types[cvt]}: " + ", ".join(f"{_rel_name(rel)} {names[key]}" for rel, key in named) + "."
        for _, key in named:
            sentences[key].append(line)
    return {key: " ".join(dict.fromkeys(lines)) for key, lines in sentences.items()}

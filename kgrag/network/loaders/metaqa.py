"""MetaQA (WikiMovies KB) as a knowledge network.

Object types come from the positions in the 9 relations: every head is a ``movie``; tails are ``person``
(directed_by, written_by, starred_actors), ``genre``, ``language``, ``tag``, ``year``, ``rating``, ``votes``.
MetaQA keys entities by name and a name can play two roles (a title that is also a person's or a tag's name), so
instance ids are ``<type>:<name>`` and one name may be several instances. Every type has a ``name`` property
(``knn`` + ``match`` + exact/prefix/contain); ``year`` also has an integer ``value`` for comparisons.
"""

from __future__ import annotations

from pathlib import Path

from kgrag.data.metaqa import read_kb
from kgrag.network.loaders import NetworkData
from kgrag.network.schema.model import (
    DataProperty,
    Instance,
    KnowledgeNetwork,
    Link,
    ObjectType,
    RelationType,
)

__all__ = ["METAQA_RELATIONS", "load_metaqa", "metaqa_network"]

NAME_OPS = ["knn", "match", "==", "!=", "in", "prefix", "contain", "like", "regex", "exist"]

_TYPES: dict[str, str] = {
    "movie": "A film (title as in WikiMovies)",
    "person": "A person: film director, writer or actor",
    "genre": "A film genre such as Comedy or Drama",
    "language": "The language a film is in",
    "tag": "A tag users gave a film (topic, keyword, person)",
    "year": "A film's release year",
    "rating": "A film's IMDb rating band",
    "votes": "A film's IMDb votes band (how popular it is)",
}

# relation -> (target type, name, comment); the source is always movie
METAQA_RELATIONS: dict[str, tuple[str, str, str]] = {
    "directed_by": ("person", "directed by", "the director of the movie"),
    "written_by": ("person", "written by", "the screenwriter or writer of the movie"),
    "starred_actors": ("person", "starred actors", "the actors starring in the movie, the cast"),
    "has_genre": ("genre", "has genre", "the genre of the movie"),
    "in_language": ("language", "in language", "the language of the movie"),
    "has_tags": ("tag", "has tags", "tags describing the movie: topics, keywords"),
    "release_year": ("year", "release year", "the year the movie was released"),
    "has_imdb_rating": ("rating", "has imdb rating", "the movie's IMDb rating"),
    "has_imdb_votes": ("votes", "has imdb votes", "how many IMDb votes the movie has, its popularity"),
}


def metaqa_network(kn_id: str = "metaqa") -> KnowledgeNetwork:
    object_types = []
    for type_id, comment in _TYPES.items():
        props = [
            DataProperty(
                name="name",
                display_name="name",
                type="string",
                comment=f"{type_id} name",
                condition_operations=list(NAME_OPS),
            )
        ]
        if type_id == "year":
            props.append(
                DataProperty(
                    name="value",
                    type="integer",
                    comment="the year as a number",
                    condition_operations=["==", ">", ">=", "<", "<=", "range"],
                )
            )
        object_types.append(
            ObjectType(
                id=type_id,
                name=type_id,
                comment=comment,
                data_properties=props,
                primary_keys=["name"],
                display_key="name",
                tags=["metaqa"],
            )
        )
    relation_types = [
        RelationType(
            id=rel, name=name, comment=comment, source_object_type_id="movie", target_object_type_id=tgt
        )
        for rel, (tgt, name, comment) in METAQA_RELATIONS.items()
    ]
    return KnowledgeNetwork(
        kn_id=kn_id,
        name="MetaQA movies",
        comment="WikiMovies knowledge base (MetaQA): movies, people, genres, languages, tags",
        object_types=object_types,
        relation_types=relation_types,
    )


def load_metaqa(data_dir: str | Path, kn_id: str = "metaqa") -> NetworkData:
    """Read ``<data_dir>/metaqa/kb.txt`` (or ``data_dir`` itself when it is the kb file/folder)."""
    path = Path(data_dir)
    kb = next(
        (p for p in (path / "metaqa" / "kb.txt", path / "kb.txt", path) if p.is_file()),
        path / "metaqa" / "kb.txt",
    )
    dataset = read_kb(kb)
    props: dict[str, tuple[str, dict[str, object]]] = {}
    links: list[Link] = []

    def node(type_id: str, name: str) -> str:
        key = f"{type_id}:{name}"
        if key not in props:
            properties: dict[str, object] = {"name": name}
            if type_id == "year" and name.isdigit():
                properties["value"] = int(name)
            props[key] = (type_id, properties)
        return key

    unknown = sorted({t.relation for t in dataset.triples} - set(METAQA_RELATIONS))
    if unknown:
        raise ValueError(f"{kb}: relations not in the MetaQA schema: {', '.join(unknown)}")
    for t in dataset.triples:
        target_type = METAQA_RELATIONS[t.relation][0]
        links.append(
            Link(
                relation_type_id=t.relation,
                source_id=node("movie", t.head),
                target_id=node(target_type, t.tail),
            )
        )
    instances = [Instance(object_type_id=ty, id=key, properties=p) for key, (ty, p) in props.items()]
    return metaqa_network(kn_id), instances, links

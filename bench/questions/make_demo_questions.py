"""One-relation evaluation questions over the demo network, written independently of any planner.

How the files are built (``python -m bench.questions.make_demo_questions`` rewrites both, byte for byte the same
each run):

* :data:`KINDS` lists the question kinds: a relation type of ``kgrag.network.loaders.demo.demo_network`` and the
  direction it is followed from the topic (``out``: the topic is the relation's source, ``in``: its target, e.g.
  "Who was born in Osaka?" follows ``people.person.place_of_birth`` in). Each kind has its own hand-written
  wordings, split into a ``dev`` list and a ``holdout`` list that share none: ``demo_dev.jsonl`` uses only the
  dev wordings, ``demo_holdout.jsonl`` only the holdout ones.
* Topics are the instances of the relation's topic-side type that have at least one answer, sorted by name and
  shuffled by one ``random.Random(7)``; each wording is filled with the next :data:`TOPICS_PER_WORDING` topics of
  that shuffled cycle (dev first, then holdout, kinds in list order), so the wordings of a kind visit different
  topics.
* The gold answers are read from the network's links: the display names (``name``) of every instance reached
  from the topic through the relation in the stated direction. A question whose gold set is empty is not written.

Placeholders in a wording: ``{t}`` the topic's name, ``{tl}`` it in lower case, ``{a}`` the lower-case name with
an indefinite article ("an actor"). Each line is ``{"question", "answers", "topic", "kind", "relation",
"direction"}``. The holdout file is for the final measure only: do not tune anything on it.
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from kgrag.network.loaders.demo import demo_network

__all__ = ["KINDS", "Kind", "build", "main", "render"]

HERE = Path(__file__).resolve().parent
DEV_PATH = HERE / "demo_dev.jsonl"
HOLDOUT_PATH = HERE / "demo_holdout.jsonl"
SEED = 7
TOPICS_PER_WORDING = 2


@dataclass(frozen=True)
class Kind:
    name: str
    relation: str
    direction: str  # "out": topic is the relation's source; "in": its target
    dev: tuple[str, ...]
    holdout: tuple[str, ...]


KINDS: tuple[Kind, ...] = (
    # ---- films ----
    Kind(
        "film_director", "film.film.directed_by", "out",
        dev=("Who directed {t}?", "{t} was directed by whom?", "Name the director of {t}.",
             "who's the filmmaker behind {t}"),
        holdout=("Who was the director of {t}?", "who made the film {t}", "Who's {t} directed by?",
                 "Tell me who directed the movie {t}."),
    ),
    Kind(
        "film_genre", "film.film.genre", "out",
        dev=("What genre is {t}?", "What kind of movie is {t}?", "which genres does {t} fall under",
             "{t} - what genre?"),
        holdout=("What genre does {t} belong to?", "what type of film is {t}",
                 "How would you classify {t}, genre-wise?", "Tell me the genre of the film {t}."),
    ),
    Kind(
        "film_language", "film.film.language", "out",
        dev=("What language is {t} in?", "In which language was {t} made?", "what's the language of {t}",
             "{t} is in what language?"),
        holdout=("Which language is spoken in the film {t}?", "what language was {t} filmed in",
                 "What language do they speak in {t}?", "Tell me the original language of {t}."),
    ),
    Kind(
        "film_country", "film.film.country", "out",
        dev=("Which country is the film {t} from?", "What country produced {t}?",
             "where was the movie {t} made", "{t} is a film from which country?"),
        holdout=("What's the country of origin of {t}?", "In what country was {t} produced?",
                 "which country made {t}", "{t} comes from what country?"),
    ),
    Kind(
        "film_release_year", "film.film.initial_release_date", "out",
        dev=("When was {t} released?", "What year did {t} come out?", "release year of {t}?",
             "{t} came out in which year?"),
        holdout=("In what year was {t} first released?", "when did {t} hit theaters",
                 "What year is the film {t} from?", "Which year did {t} premiere?"),
    ),
    # ---- people ----
    Kind(
        "person_birthplace", "people.person.place_of_birth", "out",
        dev=("Where was {t} born?", "What's {t}'s hometown?", "In which city was {t} born?",
             "{t} was born where?"),
        holdout=("What city is {t} from originally?", "where's {t}'s birthplace",
                 "Name the city where {t} was born.", "Which city was {t} born in?"),
    ),
    Kind(
        "person_birth_year", "people.person.date_of_birth", "out",
        dev=("When was {t} born?", "What year was {t} born in?", "{t}'s year of birth?",
             "what is the birth year of {t}"),
        holdout=("In which year was {t} born?", "What year did {t} come into the world?",
                 "{t} was born in what year", "Tell me {t}'s birth year."),
    ),
    Kind(
        "person_nationality", "people.person.nationality", "out",
        dev=("What is {t}'s nationality?", "Which country is {t} a citizen of?", "what nationality is {t}",
             "{t} holds which country's citizenship?"),
        holdout=("Where is {t} from? Which country?", "What country does {t} come from?",
                 "{t}'s nationality?", "which nation does {t} belong to"),
    ),
    Kind(
        "person_profession", "people.person.profession", "out",
        dev=("What does {t} do for a living?", "What is {t}'s job?", "{t}'s profession?",
             "what line of work is {t} in"),
        holdout=("What's {t}'s occupation?", "What does {t} work as?", "Which profession does {t} have?",
                 "how does {t} earn a living"),
    ),
    Kind(
        "person_gender", "people.person.gender", "out",
        dev=("What is {t}'s gender?", "Is {t} male or female?", "{t} - man or woman?"),
        holdout=("What gender is {t}?", "is {t} a man or a woman", "Tell me {t}'s gender."),
    ),
    Kind(
        "director_films", "film.director.film", "out",
        dev=("Which films did {t} direct?", "What movies has {t} directed?", "list the films directed by {t}",
             "{t} directed which films?"),
        holdout=("What has {t} directed?", "Name the movies {t} was the director of.",
                 "which films were made by director {t}", "Show me {t}'s films as a director."),
    ),
    # ---- teams ----
    Kind(
        "team_city", "sports.sports_team.location", "out",
        dev=("Where is the {t} team based?", "Which city do the {t} play in?", "what city are the {t} from",
             "home city of the {t}?"),
        holdout=("Where are the {t} located?", "In which city are the {t} based?",
                 "the {t} are based in what city", "Which city is home to the {t}?"),
    ),
    Kind(
        "team_sport", "sports.sports_team.sport", "out",
        dev=("What sport do the {t} play?", "Which sport is the {t} team in?", "what do the {t} play",
             "{t}: which sport?"),
        holdout=("What sport does the {t} team play?", "Which sport are the {t} a team for?",
                 "the {t} play what sport?", "Tell me the sport of the {t}."),
    ),
    # ---- countries and cities ----
    Kind(
        "country_language", "location.country.official_language", "out",
        dev=("What language do people speak in {t}?", "What is the official language of {t}?",
             "which language is official in {t}", "{t}'s official language?"),
        holdout=("What language is spoken in {t}?", "what do they speak in {t}",
                 "Which language does {t} use officially?", "Name {t}'s official language."),
    ),
    Kind(
        "country_continent", "location.location.containedby@Country", "out",
        dev=("Which continent is {t} on?", "What continent is {t} in?", "{t} is located on which continent?",
             "where in the world is {t}, which continent"),
        holdout=("On which continent is {t}?", "what continent does {t} belong to",
                 "Name the continent {t} is part of.", "{t} lies in what continent?"),
    ),
    Kind(
        "country_cities", "location.location.contains", "out",
        dev=("Which cities are in {t}?", "What cities does {t} have?", "name the cities in {t}",
             "list cities located in {t}"),
        holdout=("What cities are there in {t}?", "Which cities does {t} contain?", "{t} has which cities?",
                 "give me the cities of {t}"),
    ),
    Kind(
        "city_country", "location.location.containedby@City", "out",
        dev=("Which country is {t} in?", "What country is {t} located in?", "{t} is in which country?",
             "the city {t} belongs to what country"),
        holdout=("In which country is {t}?", "what country's {t} in", "Name the country where {t} is.",
                 "Which nation is the city of {t} part of?"),
    ),
    # ---- the other direction: from a value back to who or what has it ----
    Kind(
        "people_born_in_city", "people.person.place_of_birth", "in",
        dev=("Who was born in {t}?", "Which people were born in {t}?", "name someone born in {t}"),
        holdout=("Who has {t} as their birthplace?", "which people's hometown is {t}",
                 "list people born in the city of {t}"),
    ),
    Kind(
        "people_born_in_year", "people.person.date_of_birth", "in",
        dev=("Which people were born in the year {t}?", "who was born in {t}",
             "name people whose birth year is {t}"),
        holdout=("Who's born in {t}?", "Which persons have a birth year of {t}?", "list everyone born in {t}"),
    ),
    Kind(
        "people_of_nationality", "people.person.nationality", "in",
        dev=("Which people are citizens of {t}?", "who is a national of {t}",
             "List the people whose nationality is {t}."),
        holdout=("Who holds citizenship in {t}?", "Which people are nationals of {t}?",
                 "name people with {t} as their nationality"),
    ),
    Kind(
        "people_with_profession", "people.person.profession", "in",
        dev=("Who works as {a}?", "Which people are {tl}s?", "list all the {tl}s", "who is {a} by profession"),
        holdout=("Which people have the profession {t}?", "Name every {tl}.", "who's {a}?",
                 "Find people whose job is {tl}."),
    ),
    Kind(
        "films_of_genre", "film.film.genre", "in",
        dev=("Which films are {tl} films?", "What {tl} movies are there?", "list films in the {t} genre",
             "name {a} film"),
        holdout=("Which movies belong to the {t} genre?", "Show me {tl} films.",
                 "what films are classified as {tl}", "{t} movies?"),
    ),
    Kind(
        "films_in_language", "film.film.language", "in",
        dev=("Which films are in {t}?", "What movies were made in {t}?", "list {t}-language films"),
        holdout=("Which movies are in the {t} language?", "name films in {t}",
                 "What films have {t} as their language?"),
    ),
    Kind(
        "films_from_country", "film.film.country", "in",
        dev=("Which films were made in {t}?", "What movies come from {t}?", "list films produced in {t}"),
        holdout=("Which movies are from {t}?", "name the films whose country is {t}", "What films did {t} produce?"),
    ),
    Kind(
        "films_released_in_year", "film.film.initial_release_date", "in",
        dev=("Which films came out in {t}?", "What movies were released in {t}?", "films released in {t}?"),
        holdout=("What came out in theaters in {t}?", "Which movies premiered in {t}?", "name a film from {t}"),
    ),
    Kind(
        "teams_in_city", "sports.sports_team.location", "in",
        dev=("Which team is based in {t}?", "What sports team plays in {t}?", "teams from {t}?"),
        holdout=("Name the team located in {t}.", "which teams call {t} home", "What's {t}'s sports team?"),
    ),
    Kind(
        "teams_of_sport", "sports.sports_team.sport", "in",
        dev=("Which teams play {tl}?", "What {tl} teams are there?", "list the {tl} teams"),
        holdout=("Which teams compete in {tl}?", "name teams that play {tl}", "What are the {t} teams?"),
    ),
    Kind(
        "countries_speaking_language", "location.country.official_language", "in",
        dev=("Which countries speak {t}?", "In which country is {t} the official language?",
             "where is {t} an official language"),
        holdout=("What countries have {t} as their official language?", "{t} is official in which countries?",
                 "name the countries whose official language is {t}"),
    ),
    Kind(
        "countries_in_continent", "location.location.containedby@Country", "in",
        dev=("Which countries are in {t}?", "What countries are located in {t}?", "list the countries of {t}"),
        holdout=("Name the countries on the continent of {t}.", "which countries does {t} contain",
                 "{t} has which countries?"),
    ),
)  # fmt: skip


def render(wording: str, topic: str) -> str:
    """One wording filled with a topic name (see the module docstring for the placeholders)."""
    lower = topic.lower()
    article = "an" if lower[:1] in "aeiou" else "a"
    return wording.format(t=topic, tl=lower, a=f"{article} {lower}")


def _gold_index(network, instances, links) -> dict[tuple[str, str], dict[str, set[str]]]:  # noqa: ANN001
    """``(relation, direction) -> topic id -> names reached``."""
    names = {i.id: str(i.properties["name"]) for i in instances}
    index: dict[tuple[str, str], dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for link in links:
        index[(link.relation_type_id, "out")][link.source_id].add(names[link.target_id])
        index[(link.relation_type_id, "in")][link.target_id].add(names[link.source_id])
    return index


def build() -> dict[str, list[dict]]:
    """``{"dev": rows, "holdout": rows}`` (deterministic)."""
    network, instances, links = demo_network()
    relation_types = {rt.id: rt for rt in network.relation_types}
    index = _gold_index(network, instances, links)
    rng = random.Random(SEED)
    out: dict[str, list[dict]] = {}
    for split in ("dev", "holdout"):
        rows: list[dict] = []
        seen: set[str] = set()
        for kind in KINDS:
            rt = relation_types[kind.relation]  # KeyError: a relation type the demo network no longer has
            topic_type = rt.source_object_type_id if kind.direction == "out" else rt.target_object_type_id
            reached = index[(kind.relation, kind.direction)]
            topics = sorted(
                (i for i in instances if i.object_type_id == topic_type and reached.get(i.id)),
                key=lambda i: (str(i.properties["name"]), i.id),
            )
            if not topics:
                continue
            rng.shuffle(topics)
            cursor = 0
            for wording in getattr(kind, split):
                for _ in range(min(TOPICS_PER_WORDING, len(topics))):
                    topic = topics[cursor % len(topics)]
                    cursor += 1
                    name = str(topic.properties["name"])
                    question = render(wording, name)
                    if question in seen:
                        continue
                    seen.add(question)
                    rows.append(
                        {
                            "question": question,
                            "answers": sorted(reached[topic.id]),
                            "topic": name,
                            "kind": kind.name,
                            "relation": kind.relation,
                            "direction": kind.direction,
                        }
                    )
        out[split] = rows
    return out


def dumps(rows: list[dict]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def main() -> None:
    sets = build()
    for split, path in (("dev", DEV_PATH), ("holdout", HOLDOUT_PATH)):
        path.write_text(dumps(sets[split]), encoding="utf-8")
        print(f"{path.relative_to(HERE.parents[1])}: {len(sets[split])} questions")


if __name__ == "__main__":
    main()

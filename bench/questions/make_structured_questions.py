"""Structured question sets — counts, filters, superlatives, hops, answer types, two topics, literals — written by code
from each graph's data, gold computed by walking that data (never typed).

    python -m bench.questions.make_structured_questions    # rewrites bench/questions/structured/*.jsonl, the same bytes

Graphs: the invented ones of :mod:`bench.user_graphs` (their world, :mod:`bench.worlds`), the demo KG
(:func:`kgrag.data.demo.demo_kg`, read as triples), the demo network (:func:`kgrag.network.loaders.demo.demo_network`)
and the library example (``examples/library/library.yaml``, read by the project's declarative loader). A
:class:`Template` is a kind, a few hand-written wordings and the walk that computes the gold:

* ``one_hop`` / ``reverse`` / ``two_hop`` / ``answer_type``: the names of the nodes reached from the topic along
  ``path`` (``^rel`` = against the edge); ``count``: their number, as a string;
* ``literal``: the value of ``attr`` on the topic (as written in the data: ``1879-03-14``, ``1965``, ``6450``);
* ``year_filter``: the candidates (reached from the topic, or every node of ``of_type``) whose ``attr``'s year is
  before (``<``) / after (``>``) a year ``{y}`` drawn between the candidates' years, so that some pass and some not;
* ``superlative``: the candidates with the least (``min``: oldest, first, earliest) / most (``max``) ``attr``;
* ``two_topics``: the nodes reached from the topic along ``path`` AND from a second topic ``{t2}`` along ``second``.

Wordings: ``{t}`` the topic, ``{t2}`` the second topic, ``{y}`` the year. Each question is drawn with one
``random.Random`` per graph: a person topic is sometimes named by its surname (when no other node shares it) or by
an other name the data records, and a fifth of the questions are written in lower case. Topics whose name is
shared by two nodes are never used. Each line: ``{"question", "answers", "kind", "topic", "topics",
"topic_entities", "graph", "template"}`` — the JSONL ``kgrag agent-eval --kg`` reads (it skips a question
without a topic). Parts: a graph of :data:`bench.user_graphs.GRAPHS` goes wholly to its part; the demo KG, the demo
network and the library are split by a 30 % draw seeded by the question's text into ``_holdout`` (the rest
``_dev``); no question text is in both. ``demo_kg_suggested.jsonl``: the demo KG's 18 questions (what ``kgrag prepare --dataset demo`` prepares and
suggests; the three suggestions are picked at bench time by :func:`kgrag.prep.next_steps.sample_questions`).
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench.user_graphs import GRAPHS
from bench.worlds import World, world_from_kg, world_from_network

__all__ = ["KINDS", "SPECS", "Template", "build", "graph_world", "main", "questions_for"]

HERE = Path(__file__).resolve().parent
OUT = HERE / "structured"
ROOT = HERE.parents[1]
KINDS = ("one_hop", "reverse", "two_hop", "answer_type", "count", "year_filter", "superlative", "two_topics",
         "literal")
TOPICS_PER_WORDING = 2  # 3 on the graphs split between dev and held-out (fewer templates fit them)
HOLDOUT_SHARE = 0.3
MIXED = ("demo_kg", "demo_net", "library")  # graphs split between dev and held-out


@dataclass(frozen=True)
class Template:
    kind: str
    wordings: tuple[str, ...]
    path: tuple[str, ...] = ()
    topic_type: str | None = None  # None, or a type the world does not use: any node with an answer
    of_type: str | None = None  # year_filter / superlative without a topic: every node of this type
    attr: str | None = None  # literal / year_filter / superlative: attribute, or "@relation" to a value node
    op: str | None = None  # "<" / ">" (year_filter), "min" / "max" (superlative)
    second: tuple[str, ...] = ()  # two_topics: the second topic's path
    second_type: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown kind {self.kind!r}")


def T(kind: str, wordings: tuple[str, ...] | str, path: tuple[str, ...] | str = (), **kw: object) -> Template:  # noqa: N802
    """A template; a single wording or relation may be given as a string."""
    return Template(kind, (wordings,) if isinstance(wordings, str) else wordings,
                    (path,) if isinstance(path, str) else path, **kw)  # type: ignore[arg-type]


SCIENTISTS = (
    T("one_hop", ("Where was {t} born?", "In which city was {t} born?", "what is {t}'s birthplace",
                  "{t} was born in what city?"), "born_in", topic_type="Scientist"),
    T("one_hop", ("Where did {t} study?", "Which university did {t} attend?", "what university was {t} educated at"),
      "educated_at", topic_type="Scientist"),
    T("one_hop", ("Which prizes did {t} win?", "what awards has {t} received", "Name the prizes won by {t}."),
      "won_prize", topic_type="Scientist"),
    T("one_hop", ("What field did {t} work in?", "what was {t}'s field of research"), "field",
      topic_type="Scientist"),
    T("reverse", ("Who won the {t}?", "Which scientists received the {t}?", "list the winners of the {t}"),
      "^won_prize", topic_type="Prize"),
    T("reverse", ("Which scientists were born in {t}?", "who was born in {t}"), "^born_in", topic_type="City"),
    T("reverse", ("Who studied at {t}?", "which scientists were educated at {t}"), "^educated_at",
      topic_type="University"),
    T("two_hop", ("In which city is the university where {t} studied?",
                  "where is the university {t} attended located"), ("educated_at", "located_in"),
      topic_type="Scientist"),
    T("two_hop", ("What prizes were won by scientists born in {t}?", "which awards did people born in {t} receive"),
      ("^born_in", "won_prize"), topic_type="City"),
    T("answer_type", ("In which country was {t} born?", "What country is {t} from?", "{t} was born in which country?",
                      "which country was {t} born in"), ("born_in", "in_country"), topic_type="Scientist"),
    T("answer_type", ("In which country did {t} study?", "in what country did {t} go to university"),
      ("educated_at", "located_in", "in_country"), topic_type="Scientist"),
    T("count", ("How many prizes did {t} win?", "how many awards has {t} received",
                "What is the number of prizes won by {t}?"), "won_prize", topic_type="Scientist"),
    T("count", ("How many scientists won the {t}?", "how many people have received the {t}"), "^won_prize",
      topic_type="Prize"),
    T("count", ("How many scientists studied at {t}?",), "^educated_at", topic_type="University"),
    T("year_filter", ("Which winners of the {t} were born before {y}?", "who won the {t} and was born before {y}"),
      "^won_prize", topic_type="Prize", attr="birth_date", op="<"),
    T("year_filter", ("Which {t} winners were born after {y}?",), "^won_prize", topic_type="Prize",
      attr="birth_date", op=">"),
    T("year_filter", ("Which scientists were born before {y}?", "list the scientists born before {y}"),
      of_type="Scientist", attr="birth_date", op="<"),
    T("year_filter", ("Which universities were founded before {y}?",), of_type="University", attr="founded", op="<"),
    T("superlative", ("Who is the oldest scientist?", "which scientist was born first"), of_type="Scientist",
      attr="birth_date", op="min"),
    T("superlative", ("Who is the youngest scientist?",), of_type="Scientist", attr="birth_date", op="max"),
    T("superlative", ("Who is the oldest winner of the {t}?", "which {t} winner was born first"), "^won_prize",
      topic_type="Prize", attr="birth_date", op="min"),
    T("superlative", ("Who is the youngest winner of the {t}?",), "^won_prize", topic_type="Prize",
      attr="birth_date", op="max"),
    T("superlative", ("Which is the largest city in {t}?", "what is the most populous city of {t}"), "^in_country",
      topic_type="Country", attr="population", op="max"),
    T("superlative", ("Which is the oldest university?",), of_type="University", attr="founded", op="min"),
    T("two_topics", ("Who won both the {t} and the {t2}?", "which scientists received the {t} and the {t2}"),
      "^won_prize", topic_type="Prize", second=("^won_prize",), second_type="Prize"),
    T("two_topics", ("Which winners of the {t} were born in {t2}?", "who won the {t} and was born in {t2}"),
      "^won_prize", topic_type="Prize", second=("^born_in",), second_type="City"),
    T("two_topics", ("Who studied at {t} and worked in {t2}?",), "^educated_at", topic_type="University",
      second=("^field",), second_type="Field"),
    T("literal", ("When was {t} born?", "What is the date of birth of {t}?", "{t}'s birth date?"),
      topic_type="Scientist", attr="birth_date"),
    T("literal", ("When was {t} founded?", "in what year was {t} founded"), topic_type="University", attr="founded"),
    T("literal", ("What is the population of {t}?", "how many people live in {t}"), topic_type="City",
      attr="population"),
    T("literal", ("When was the {t} established?",), topic_type="Prize", attr="established"),
)

BANDS = (
    T("one_hop", ("Where was {t} formed?", "which city is {t} from", "Where did the band {t} form?"), "formed_in",
      topic_type="Band"),
    T("one_hop", ("What genre does {t} play?", "what kind of music is {t}"), "genre", topic_type="Band"),
    T("one_hop", ("Who are the members of {t}?", "who plays in {t}"), "member", topic_type="Band"),
    T("one_hop", ("Which label released {t}?", "what record label put out {t}"), "record_label",
      topic_type="Album"),
    T("one_hop", ("Who recorded the album {t}?", "which band made {t}"), "by_artist", topic_type="Album"),
    T("reverse", ("What albums did {t} release?", "list the albums by {t}", "which records has {t} made"),
      "^by_artist", topic_type="Band"),
    T("reverse", ("Which albums were released by {t}?", "what albums came out on {t}"), "^record_label",
      topic_type="Label"),
    T("reverse", ("Which bands were formed in {t}?", "what bands come from {t}"), "^formed_in", topic_type="City"),
    T("reverse", ("Which bands play {t}?", "name the {t} bands"), "^genre", topic_type="Genre"),
    T("two_hop", ("Where was the band that recorded {t} formed?", "what city is the band behind {t} from"),
      ("by_artist", "formed_in"), topic_type="Album"),
    T("two_hop", ("Where was the band of {t} formed?",), ("^member", "formed_in"), topic_type="Musician"),
    T("two_hop", ("Which labels released albums by {t}?",), ("^by_artist", "record_label"), topic_type="Band"),
    T("answer_type", ("In which country was {t} formed?", "what country does {t} come from",
                      "{t} is a band from which country?"), ("formed_in", "in_country"), topic_type="Band"),
    T("answer_type", ("In which city is the label of {t} based?",), ("record_label", "label_city"),
      topic_type="Album"),
    T("answer_type", ("What country is {t}'s band from?",), ("^member", "formed_in", "in_country"),
      topic_type="Musician"),
    T("count", ("How many albums did {t} release?", "how many records has {t} put out",
                "What is the number of albums by {t}?"), "^by_artist", topic_type="Band"),
    T("count", ("How many members does {t} have?",), "member", topic_type="Band"),
    T("count", ("How many albums were released on {t}?",), "^record_label", topic_type="Label"),
    T("year_filter", ("Which albums by {t} came out before {y}?", "what did {t} release before {y}"), "^by_artist",
      topic_type="Band", attr="released", op="<"),
    T("year_filter", ("Which albums did {t} release after {y}?",), "^by_artist", topic_type="Band",
      attr="released", op=">"),
    T("year_filter", ("Which bands were formed before {y}?",), of_type="Band", attr="formed", op="<"),
    T("year_filter", ("Which albums on {t} were released after {y}?",), "^record_label", topic_type="Label",
      attr="released", op=">"),
    T("year_filter", ("Which members of {t} were born before {y}?",), "member", topic_type="Band",
      attr="birth_date", op="<"),
    T("superlative", ("What was the first album by {t}?", "which is {t}'s earliest album"), "^by_artist",
      topic_type="Band", attr="released", op="min"),
    T("superlative", ("What is the latest album of {t}?", "which album did {t} release last"), "^by_artist",
      topic_type="Band", attr="released", op="max"),
    T("superlative", ("Which is the oldest band?",), of_type="Band", attr="formed", op="min"),
    T("superlative", ("Who is the youngest member of {t}?",), "member", topic_type="Band", attr="birth_date",
      op="max"),
    T("superlative", ("Which album by {t} has the most tracks?",), "^by_artist", topic_type="Band", attr="tracks",
      op="max"),
    T("two_topics", ("Which {t2} bands were formed in {t}?", "which bands from {t} play {t2}"), "^formed_in",
      topic_type="City", second=("^genre",), second_type="Genre"),
    T("two_topics", ("Which albums by {t} were released on {t2}?",), "^by_artist", topic_type="Band",
      second=("^record_label",), second_type="Label"),
    T("literal", ("When was {t} formed?", "what year did {t} get together"), topic_type="Band", attr="formed"),
    T("literal", ("When was {t} released?", "what year did the album {t} come out"), topic_type="Album",
      attr="released"),
    T("literal", ("When was {t} born?",), topic_type="Musician", attr="birth_date"),
    T("literal", ("How many tracks are on {t}?",), topic_type="Album", attr="tracks"),
)

RIVERS = (
    T("one_hop", ("Which countries does the river {t} flow through?", "what countries does the {t} cross"),
      "flows_through", topic_type="River"),
    T("one_hop", ("In which country is {t}?", "where is {t} located"), "mountain_in", topic_type="Mountain"),
    T("one_hop", ("Which mountain range is {t} part of?",), "part_of_range", topic_type="Mountain"),
    T("one_hop", ("What is the capital of {t}?", "{t}'s capital?"), "capital", topic_type="Country"),
    T("reverse", ("Which rivers flow through {t}?", "what rivers are in {t}"), "^flows_through",
      topic_type="Country"),
    T("reverse", ("Which mountains are in the {t}?", "list the peaks of the {t}"), "^part_of_range",
      topic_type="Range"),
    T("reverse", ("Which mountains are located in {t}?",), "^mountain_in", topic_type="Country"),
    T("two_hop", ("What are the capitals of the countries the river {t} flows through?",),
      ("flows_through", "capital"), topic_type="River"),
    T("two_hop", ("What is the capital of the country where {t} is?",), ("mountain_in", "capital"),
      topic_type="Mountain"),
    T("answer_type", ("On which continent is {t}?", "which continent is {t} in"), ("mountain_in", "on_continent"),
      topic_type="Mountain"),
    T("answer_type", ("On what continent does the river {t} flow?",), ("flows_through", "on_continent"),
      topic_type="River"),
    T("answer_type", ("Which continent is {t} on?",), ("city_in", "on_continent"), topic_type="City"),
    T("count", ("How many countries does the river {t} flow through?",), "flows_through", topic_type="River"),
    T("count", ("How many rivers flow through {t}?",), "^flows_through", topic_type="Country"),
    T("count", ("How many mountains are in the {t}?",), "^part_of_range", topic_type="Range"),
    T("year_filter", ("Which mountains of the {t} were first climbed before {y}?",), "^part_of_range",
      topic_type="Range", attr="first_ascent", op="<"),
    T("year_filter", ("Which mountains were first climbed after {y}?",), of_type="Mountain", attr="first_ascent",
      op=">"),
    T("superlative", ("Which is the longest river in {t}?", "what's the longest river flowing through {t}"),
      "^flows_through", topic_type="Country", attr="length_km", op="max"),
    T("superlative", ("Which is the shortest river in {t}?",), "^flows_through", topic_type="Country",
      attr="length_km", op="min"),
    T("superlative", ("What is the highest mountain of the {t}?", "which peak in the {t} is the tallest"),
      "^part_of_range", topic_type="Range", attr="height_m", op="max"),
    T("superlative", ("Which country has the largest population?",), of_type="Country", attr="population", op="max"),
    T("superlative", ("What is the highest mountain?",), of_type="Mountain", attr="height_m", op="max"),
    T("superlative", ("What is the most populous country in {t}?",), "^on_continent", topic_type="Continent",
      attr="population", op="max"),
    T("superlative", ("Which mountain of the {t} was climbed first?",), "^part_of_range", topic_type="Range",
      attr="first_ascent", op="min"),
    T("two_topics", ("Which rivers flow through both {t} and {t2}?",), "^flows_through", topic_type="Country",
      second=("^flows_through",), second_type="Country"),
    T("two_topics", ("Which mountains of the {t2} are in {t}?",), "^mountain_in", topic_type="Country",
      second=("^part_of_range",), second_type="Range"),
    T("literal", ("How long is the river {t}?", "what is the length of the {t}"), topic_type="River",
      attr="length_km"),
    T("literal", ("How high is {t}?", "what is the elevation of {t}"), topic_type="Mountain", attr="height_m"),
    T("literal", ("What is the population of {t}?",), topic_type="Country", attr="population"),
    T("literal", ("When was {t} first climbed?",), topic_type="Mountain", attr="first_ascent"),
    T("literal", ("How large is {t}?",), topic_type="Country", attr="area_km2"),
)

COURSES = (
    T("one_hop", ("Which department offers {t}?", "what department runs {t}"), "offered_by", topic_type="Course"),
    T("one_hop", ("Which department does {t} work in?",), "works_in", topic_type="Teacher"),
    T("one_hop", ("What courses does {t} teach?", "which classes is {t} teaching"), "teaches",
      topic_type="Teacher"),
    T("one_hop", ("What is the prerequisite of {t}?",), "requires", topic_type="Course"),
    T("reverse", ("Who teaches {t}?", "which teacher gives {t}"), "^teaches", topic_type="Course"),
    T("reverse", ("Which courses does the {t} department offer?",), "^offered_by", topic_type="Department"),
    T("reverse", ("Who works in the {t} department?",), "^works_in", topic_type="Department"),
    T("two_hop", ("In which department does the teacher of {t} work?",), ("^teaches", "works_in"),
      topic_type="Course"),
    T("two_hop", ("Who teaches the courses that require {t}?",), ("^requires", "^teaches"), topic_type="Course"),
    T("answer_type", ("Which departments offer the courses taught by {t}?",), ("teaches", "offered_by"),
      topic_type="Teacher"),
    T("count", ("How many courses does {t} teach?",), "teaches", topic_type="Teacher"),
    T("count", ("How many courses does the {t} department offer?", "how many courses are offered by {t}"),
      "^offered_by", topic_type="Department"),
    T("count", ("How many teachers work in {t}?",), "^works_in", topic_type="Department"),
    T("year_filter", ("Which {t} courses were first offered before {y}?",), "^offered_by", topic_type="Department",
      attr="first_offered", op="<"),
    T("year_filter", ("Which teachers were born before {y}?",), of_type="Teacher", attr="birth_year", op="<"),
    T("year_filter", ("Who in the {t} department was hired after {y}?",), "^works_in", topic_type="Department",
      attr="hired_on", op=">"),
    T("superlative", ("Who is the oldest teacher?",), of_type="Teacher", attr="birth_year", op="min"),
    T("superlative", ("who is the youngest teacher",), of_type="Teacher", attr="birth_year", op="max"),
    T("superlative", ("Which {t} course has the most credits?",), "^offered_by", topic_type="Department",
      attr="credits", op="max"),
    T("superlative", ("Who was hired first in the {t} department?",), "^works_in", topic_type="Department",
      attr="hired_on", op="min"),
    T("superlative", ("Which is the oldest department?",), of_type="Department", attr="founded", op="min"),
    T("two_topics", ("Which teachers of {t} also teach {t2}?",), "^teaches", topic_type="Course",
      second=("^teaches",), second_type="Course"),
    T("literal", ("When was {t} born?", "what year was {t} born"), topic_type="Teacher", attr="birth_year"),
    T("literal", ("How many credits is {t} worth?",), topic_type="Course", attr="credits"),
    T("literal", ("When was {t} first offered?",), topic_type="Course", attr="first_offered"),
    T("literal", ("When was {t} hired?",), topic_type="Teacher", attr="hired_on"),
)

LIBRARY = (
    T("one_hop", ("What books did {t} write?", "which books has {t} written"), "wrote", topic_type="Author"),
    T("one_hop", ("What genre is {t}?",), "genre", topic_type="Book"),
    T("one_hop", ("Who published {t}?",), "published_by", topic_type="Book"),
    T("one_hop", ("Where was {t} born?",), "born_in", topic_type="Author"),
    T("reverse", ("Who wrote {t}?", "who is the author of {t}"), "^wrote", topic_type="Book"),
    T("reverse", ("Which books are {t}?",), "^genre", topic_type="Genre"),
    T("reverse", ("What books did {t} publish?",), "^published_by", topic_type="Publisher"),
    T("two_hop", ("Where was the author of {t} born?",), ("^wrote", "born_in"), topic_type="Book"),
    T("two_hop", ("In which city is the publisher of {t}?",), ("published_by", "located_in"), topic_type="Book"),
    T("answer_type", ("What genres does {t} write in?", "which genres has {t} written"), ("wrote", "genre"),
      topic_type="Author"),
    T("answer_type", ("Which publishers published {t}'s books?",), ("wrote", "published_by"), topic_type="Author"),
    T("count", ("How many books did {t} write?", "how many books has {t} written"), "wrote", topic_type="Author"),
    T("count", ("How many {t} books are there?",), "^genre", topic_type="Genre"),
    T("count", ("How many books did {t} publish?",), "^published_by", topic_type="Publisher"),
    T("year_filter", ("Which books were published before {y}?",), of_type="Book", attr="year", op="<"),
    T("year_filter", ("Which books by {t} were published after {y}?",), "wrote", topic_type="Author", attr="year",
      op=">"),
    T("year_filter", ("Which authors were born before {y}?",), of_type="Author", attr="birth_year", op="<"),
    T("superlative", ("Which is the oldest book?", "what is the earliest book"), of_type="Book", attr="year",
      op="min"),
    T("superlative", ("Who is the youngest author?",), of_type="Author", attr="birth_year", op="max"),
    T("superlative", ("Which book by {t} was published first?",), "wrote", topic_type="Author", attr="year",
      op="min"),
    T("superlative", ("What is the longest book by {t}?",), "wrote", topic_type="Author", attr="pages", op="max"),
    T("superlative", ("Which book has the most pages?",), of_type="Book", attr="pages", op="max"),
    T("two_topics", ("Which books by {t} are {t2}?",), "wrote", topic_type="Author", second=("^genre",),
      second_type="Genre"),
    T("two_topics", ("Which {t} books were published by {t2}?",), "^genre", topic_type="Genre",
      second=("^published_by",), second_type="Publisher"),
    T("literal", ("When was {t} published?", "what year did {t} come out"), topic_type="Book", attr="year"),
    T("literal", ("How many pages does {t} have?",), topic_type="Book", attr="pages"),
    T("literal", ("When was {t} born?",), topic_type="Author", attr="birth_year"),
)

_BIRTH, _RELEASE = "@people.person.date_of_birth", "@film.film.initial_release_date"
DEMO_NET = (
    T("one_hop", ("Who directed {t}?", "who's the director of {t}"), "film.film.directed_by", topic_type="Film"),
    T("one_hop", ("Where was {t} born?",), "people.person.place_of_birth", topic_type="Person"),
    T("reverse", ("Who was born in {t}?", "which people were born in {t}"), "^people.person.place_of_birth",
      topic_type="City"),
    T("reverse", ("Which films are in the {t} genre?",), "^film.film.genre", topic_type="Genre"),
    T("two_hop", ("Where was the director of {t} born?",), ("film.film.directed_by", "people.person.place_of_birth"),
      topic_type="Film"),
    T("two_hop", ("In which cities are the teams of {t} based?",),
      ("sports.pro_athlete.teams", "sports.sports_team_roster.team", "sports.sports_team.location"),
      topic_type="Person"),
    T("answer_type", ("In which country was {t} born?", "what country was {t} born in"),
      ("people.person.place_of_birth", "location.location.containedby@City"), topic_type="Person"),
    T("answer_type", ("On which continent is {t}?",),
      ("location.location.containedby@City", "location.location.containedby@Country"), topic_type="City"),
    T("count", ("How many films did {t} direct?",), "film.director.film", topic_type="Person"),
    T("count", ("How many films did {t} act in?",), ("film.actor.film", "film.performance.film"),
      topic_type="Person"),
    T("count", ("How many {t} films are there?",), "^film.film.genre", topic_type="Genre"),
    T("year_filter", ("Which films directed by {t} were released before {y}?",), "film.director.film",
      topic_type="Person", attr=_RELEASE, op="<"),
    T("year_filter", ("Which films were released after {y}?",), of_type="Film", attr=_RELEASE, op=">"),
    T("year_filter", ("Which people were born before {y}?",), of_type="Person", attr=_BIRTH, op="<"),
    T("superlative", ("What was the first film directed by {t}?",), "film.director.film", topic_type="Person",
      attr=_RELEASE, op="min"),
    T("superlative", ("Which is the newest film?",), of_type="Film", attr=_RELEASE, op="max"),
    T("superlative", ("Who is the youngest person?",), of_type="Person", attr=_BIRTH, op="max"),
    T("superlative", ("What is the oldest film from {t}?",), "^film.film.country", topic_type="Country",
      attr=_RELEASE, op="min"),
    T("two_topics", ("Which {t} films were made in {t2}?",), "^film.film.genre", topic_type="Genre",
      second=("^film.film.country",), second_type="Country"),
    T("two_topics", ("Which {t2} films did {t} direct?",), "film.director.film", topic_type="Person",
      second=("^film.film.genre",), second_type="Genre"),
    T("literal", ("When was {t} born?",), topic_type="Person", attr=_BIRTH),
    T("literal", ("When was {t} released?",), topic_type="Film", attr=_RELEASE),
)


def _kg_template(t: Template) -> Template:
    """A demo-network template on the demo KG: relation ids without the network's ``@Type`` suffix."""
    def strip(path: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(re.sub(r"@.*$", "", r) for r in path)

    attr = re.sub(r"@([^@]+)@.*$", r"@\1", t.attr) if t.attr else None
    return Template(t.kind, t.wordings, strip(t.path), t.topic_type, t.of_type, attr, t.op, strip(t.second),
                    t.second_type)


SPECS: dict[str, tuple[Template, ...]] = {
    "scientists": SCIENTISTS, "scientists_wd": SCIENTISTS, "bands": BANDS, "bands_fb": BANDS, "rivers": RIVERS,
    "rivers_wd": RIVERS, "courses": COURSES, "library": LIBRARY, "demo_net": DEMO_NET,
    "demo_kg": tuple(_kg_template(t) for t in DEMO_NET),
}


def graph_world(name: str) -> World:
    """The data a graph's questions are computed from."""
    if name in GRAPHS:
        return GRAPHS[name].world()
    if name == "demo_kg":
        from kgrag.data.demo import demo_kg

        return world_from_kg(name, demo_kg())
    if name == "demo_net":
        from kgrag.network.loaders.demo import demo_network

        return world_from_network(name, *demo_network())
    if name == "library":
        from kgrag.network.loaders.declarative import load_declarative

        return world_from_network(name, *load_declarative(ROOT / "examples" / "library" / "library.yaml"))
    raise KeyError(f"unknown graph {name!r}")


def _year(value: object) -> int | None:
    match = re.match(r"^-?\d{1,4}", str(value).strip())
    return int(match.group(0)) if match else None


def _number(value: object) -> float | None:
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        year = _year(value)
        return None if year is None else float(str(value).replace("-", "").replace("T", "").replace(":", "")[:14]
                                                 .ljust(14, "0"))


class _Asker:
    def __init__(self, world: World, seed: str) -> None:
        self.w = world
        self.rng = random.Random(seed)
        names = Counter(n.name for n in world.nodes.values() if n.name)
        self.unique = {n.id for n in world.nodes.values() if n.name and names[n.name] == 1}
        surnames = Counter(n.name.split()[-1] for n in world.nodes.values() if n.name)
        self.surname = {n.id: n.name.split()[-1] for n in world.nodes.values()
                        if n.type in world.person_types and len(n.name.split()) > 1
                        and surnames[n.name.split()[-1]] == 1 and n.name.split()[-1] not in names}
        self.typed = {n.type for n in world.nodes.values()}

    def topics(self, type_: str | None) -> list[str]:
        ids = [i for i in self.unique if type_ is None or type_ not in self.typed or self.w.nodes[i].type == type_]
        return sorted(ids, key=lambda i: (self.w.nodes[i].name, i))

    def say(self, node: str) -> str:
        """How a question names the node: its name, sometimes a surname or another recorded name."""
        n = self.w.nodes[node]
        roll = self.rng.random()
        if node in self.surname and roll < 0.3:
            return self.surname[node]
        if n.alt and roll > 0.8:
            return n.alt[0]
        return n.name

    def names(self, ids: set[str]) -> list[str]:
        return sorted({self.w.nodes[i].name for i in ids if self.w.nodes[i].name})

    def candidates(self, t: Template, topic: str | None) -> list[str]:
        pool = self.w.reach(topic, t.path) if topic is not None else set(self.w.of_type(t.of_type or ""))
        return sorted(c for c in pool if self.w.value(c, t.attr or "") is not None)

    def gold(self, t: Template, topic: str | None, extra: dict) -> list[str] | None:
        """The answers of ``t`` for ``topic`` (None: no question); ``extra`` receives ``y`` / ``t2``."""
        w = self.w
        if t.kind in ("one_hop", "reverse", "two_hop", "answer_type"):
            return self.names(w.reach(topic, t.path) - {topic}) or None
        if t.kind == "count":
            reached = {n for n in w.reach(topic, t.path) if w.nodes.get(n) and w.nodes[n].name}
            return [str(len(reached))] if reached else None
        if t.kind == "literal":
            value = w.value(topic, t.attr or "")
            return [str(value)] if value is not None else None
        if t.kind == "two_topics":
            first = w.reach(topic, t.path) - {topic}
            seconds = [s for s in self.topics(t.second_type) if s != topic]
            self.rng.shuffle(seconds)
            fallback = None
            for s in seconds:
                both = first & w.reach(s, t.second)
                if both and self.names(both):
                    if both != first:
                        extra["t2"] = s
                        return self.names(both)
                    fallback = fallback or (s, both)
            if fallback is None:
                return None
            extra["t2"] = fallback[0]
            return self.names(fallback[1])
        cands = self.candidates(t, topic)
        if len(cands) < 2:
            return None
        if t.kind == "superlative":
            values = {c: _number(w.value(c, t.attr or "")) for c in cands}
            best = (min if t.op == "min" else max)(v for v in values.values() if v is not None)
            winners = {c for c, v in values.items() if v == best}
            return self.names(winners) if len(winners) < len(cands) else None
        years = {c: _year(w.value(c, t.attr or "")) for c in cands}
        distinct = sorted({y for y in years.values() if y is not None})
        if len(distinct) < 2:
            return None
        k = self.rng.randint(1, len(distinct) - 1)
        lo, hi = distinct[k - 1], distinct[k]
        round_years = [y for y in range(lo, hi + 1) if y % 10 == 0]
        if t.op == "<":  # year < y keeps distinct[:k]
            y = next((r for r in round_years if lo < r <= hi), hi)
            keep = {c for c, v in years.items() if v is not None and v < y}
        else:  # year > y keeps distinct[k:]
            y = next((r for r in round_years if lo <= r < hi), lo)
            keep = {c for c, v in years.items() if v is not None and v > y}
        extra["y"] = str(y)
        return self.names(keep) or None


def questions_for(graph: str, world: World | None = None) -> list[dict]:
    """Every question of ``graph`` (deterministic), in template order."""
    world = world or graph_world(graph)
    asker = _Asker(world, f"structured:{world.name}")  # a twin is asked what its original is asked
    per_wording = TOPICS_PER_WORDING + (graph in MIXED)
    rows: list[dict] = []
    seen: set[str] = set()
    for number, t in enumerate(SPECS[graph]):
        topical = t.of_type is None
        topics = asker.topics(t.topic_type) if topical else []
        asker.rng.shuffle(topics)
        cursor = 0
        for wording in t.wordings:
            made = 0
            for _ in range(len(topics) if topical else 1):
                if made >= (per_wording if topical else 1):
                    break
                topic = topics[cursor % len(topics)] if topical else None
                cursor += 1
                extra: dict = {}
                answers = asker.gold(t, topic, extra)
                if not answers:
                    continue
                named = [topic] if topic else []
                said = {"t": asker.say(topic) if topic else ""}
                if "t2" in extra:
                    named.append(extra["t2"])
                    said["t2"] = asker.say(extra["t2"])
                question = wording.format(t=said["t"], t2=said.get("t2", ""), y=extra.get("y", ""))
                if asker.rng.random() < 0.2:
                    question = question.lower()
                if question in seen:
                    continue
                seen.add(question)
                made += 1
                topic_names = [world.nodes[n].name for n in named]
                rows.append({"question": question, "answers": answers, "kind": t.kind,
                             "topic": topic_names[0] if topic_names else None, "topics": topic_names,
                             "topic_entities": topic_names, "graph": graph, "template": number})
    return rows


def build() -> dict[str, list[dict]]:
    """``{"<graph>_<part>": rows}`` for every file (see the module docstring)."""
    out: dict[str, list[dict]] = {}
    for graph in (*GRAPHS, *MIXED):
        rows = questions_for(graph)
        if graph in GRAPHS:
            out[f"{graph}_{GRAPHS[graph].part}"] = rows
            continue
        # drawn per question text: a text two graphs share (the demo KG and its network) lands in one part
        held = [random.Random(f"split:{r['question']}").random() < HOLDOUT_SHARE for r in rows]
        out[f"{graph}_dev"] = [r for r, h in zip(rows, held, strict=True) if not h]
        out[f"{graph}_holdout"] = [r for r, h in zip(rows, held, strict=True) if h]
    out["demo_kg_suggested"] = demo_kg_questions()
    return out


def demo_kg_questions() -> list[dict]:
    """The demo KG's own 18 questions (``kgrag prepare --dataset demo``), topic brackets removed."""
    from kgrag.data import load_questions
    from kgrag.data.metaqa import TOPIC_SPAN
    from kgrag.data.spec import BUILTIN_SPECS

    return [{"question": TOPIC_SPAN.sub(lambda m: m.group(1), q.text), "answers": list(q.answer_names),
             "kind": f"demo_{q.hop}hop", "topic": q.topic_names[0] if q.topic_names else None,
             "topics": list(q.topic_names), "topic_entities": list(q.topic_names), "graph": "demo_kg", "template": -1}
            for q in load_questions(BUILTIN_SPECS["demo"]).records]


def dumps(rows: list[dict]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def read_set(name: str, folder: Path = OUT) -> list[dict]:
    """The rows of ``structured/<name>.jsonl``."""
    return [json.loads(line) for line in (folder / f"{name}.jsonl").read_text(encoding="utf-8").splitlines() if line]


def main(write: Callable[[Path, str], object] = lambda p, s: p.write_text(s, encoding="utf-8")) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, rows in build().items():
        write(OUT / f"{name}.jsonl", dumps(rows))
        kinds = Counter(r["kind"] for r in rows)
        print(f"{name}: {len(rows)} questions {dict(sorted(kinds.items()))}")


if __name__ == "__main__":
    main()

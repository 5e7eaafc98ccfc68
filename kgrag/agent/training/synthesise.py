"""Training questions synthesised from a knowledge network itself — no labelled question is read.

    questions = synthesise(profile, store.instance_names("demo"), seed=0)
    # [Synthetic(question="what is the place of birth of Jonas Okafor?", label="rel:people.person.place_of_birth",
    #            topic="Jonas Okafor"), …]

For every candidate of :mod:`kgrag.agent.kn.schema_candidates` (a property of a type, a relation type from or to
it), wordings are built from what the schema says about it — its phrases (name, display name, id words, comment
fragments) and its answer type's name — in general question frames of the network's language (English or
Chinese: :data:`FRAMES_EN`, :data:`FRAMES_ZH`), plus the frames of the answer classes its answer has
(:data:`kgrag.agent.kn.zero_shot.CUES`: a candidate whose answers are years gets "when …" wordings, a place type
"where …"). :func:`text_wordings` adds the sentences of the network's own texts that mention one candidate only (a word of
its phrases no other candidate of the type says), with the instance the text belongs to as the topic. Where the
network has its own word vectors (a Chinese network's domain vectors), each phrase is also said with
the words those vectors put next to its words (:func:`phrase_neighbours`: 病因 -> 原因, 成因). Each wording is
filled with a topic drawn from the real instances of the candidate's topic type.
Seeded: the same profile, instances and seed give the same questions, in the same order.
"""

from __future__ import annotations

import random
import re
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kgrag.agent.kn.schema_candidates import CandidateProfile, SchemaCandidate
from kgrag.rank.tokenize import has_cjk, tokenize

__all__ = ["FRAMES_EN", "FRAMES_ZH", "Synthetic", "phrase_neighbours", "synthesise", "text_wordings"]

#: general question frames: {t} the topic, {p} a phrase of the candidate, {a} its answer type's name
FRAMES_EN = ("what is the {p} of {t}?", "{t} {p}?", "what {p} does {t} have?", "tell me the {p} of {t}",
             "{t}'s {p}", "which {a} is the {p} of {t}?", "what {a} is {t} {p}?", "{p} of {t}",
             "show the {p} for {t}", "list the {a} {p} {t}", "which {a} {p} {t}?", "what are the {p} of {t}?")
FRAMES_ZH = ("{t}的{p}是什么", "{t}的{p}有哪些", "{t}{p}", "{t}有什么{p}", "{t}有哪些{p}", "请问{t}的{p}",
             "{p}{t}", "{t}{p}是什么", "{t}的{a}是什么", "{t}{p}怎么样", "想知道{t}的{p}", "{t}{p}有哪些")
#: frames of an answer class (the candidate's answers are of that class)
CLASS_FRAMES_EN = {
    "time": ("when is {t} {p}?", "what year is {t} {p}?", "when was the {p} of {t}?"),
    "place": ("where is {t} {p}?", "where is the {p} of {t}?", "in which {a} is {t} {p}?"),
    "person": ("who is the {p} of {t}?", "who is {t} {p}?", "who {p} {t}?"),
    "category": ("what kind of {a} is {t}?", "what type of {a} is {t}?", "which {a} is {t}?"),
    "number": ("how many {p} does {t} have?", "how much is the {p} of {t}?"),
    "manner": ("how is {t} {p}?", "how to {p} {t}?"),
}
CLASS_FRAMES_ZH = {
    "time": ("{t}什么时候{p}", "{t}的{p}是哪年"),
    "place": ("{t}在哪里{p}", "{t}的{p}在哪里"),
    "person": ("{t}的{p}是谁", "谁{p}{t}"),
    "category": ("{t}属于什么{a}", "{t}是哪种{a}"),
    "number": ("{t}的{p}是多少", "{t}{p}多少"),
    "manner": ("{t}怎么{p}", "{t}如何{p}", "{t}的{p}有什么方法"),
}
#: an answer class counts for a candidate when its affinity is at least this
CLASS_AFFINITY = 0.5


#: a neighbour word counts when its cosine to the phrase word is at least this
NEIGHBOUR_COSINE = 0.75


def phrase_neighbours(profile: CandidateProfile, nearest: Callable[[str, int], list[tuple[str, float]]],
                      chinese: bool, k: int = 3) -> dict[str, list[str]]:
    """Word of a candidate phrase -> up to ``k`` words the network's own vectors put next to it (cosine ≥
    :data:`NEIGHBOUR_COSINE`), for the words of the network's language (``chinese``: its instance names are), leaving
    out a word that holds it or is held by it (病因学 is no other word for 病因) and words another candidate's
    phrases say (they would teach the wrong label)."""
    said: dict[str, set[str]] = {}
    for c in profile.candidates:
        for phrase in c.phrases:
            for word in tokenize(phrase):
                said.setdefault(word, set()).add(c.label)
    out: dict[str, list[str]] = {}
    for word in sorted(said):
        # the network's language only (an English id word of a Chinese schema has no useful neighbours), no numbers
        if len(word) < 2 or has_cjk(word) != chinese or any(ch.isdigit() for ch in word):
            continue
        found = [w for w, cos in nearest(word, 10) if cos >= NEIGHBOUR_COSINE and len(w) >= 2 and word not in w
                 and w not in word and w not in said]
        if found:
            out[word] = found[:k]
    return out


_SENTENCE = re.compile(r"[。！？；;!?\n]+|(?<=[a-z0-9])\.\s+")
#: sentences of the network's texts used as training wordings: their length in characters
SENTENCE_CHARS = (6, 80)
#: instances per object type whose texts are read
TEXT_INSTANCES = 1500


def text_wordings(profile: CandidateProfile, texts: Sequence[tuple[str, str, dict[str, list[str]]]], seed: int = 0,
                  per_candidate: int = 12) -> list[Synthetic]:
    """Sentences of the network's own texts that mention one candidate only: up to ``per_candidate`` per candidate,
    from the texts of instances of its topic type (``texts``: ``(type, name, {property: [texts]})``, as
    :func:`kgrag.network.domain_vectors.instance_texts` gives), the instance's name as the topic. A candidate is
    mentioned by a word of its phrases that no other candidate of the type says."""
    rng = random.Random(seed)
    by_type: dict[str, dict[str, str]] = defaultdict(dict)  # topic type -> word -> the one label saying it
    seen: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for c in profile.candidates:
        for phrase in c.phrases:
            for word in tokenize(phrase):
                if len(word) >= 2 and not word.isascii() or len(word) >= 4:
                    seen[c.topic_type][word].add(c.label)
    for type_id, words in seen.items():
        by_type[type_id] = {w: next(iter(labels)) for w, labels in words.items() if len(labels) == 1}
    found: dict[str, list[Synthetic]] = defaultdict(list)
    counts: dict[str, int] = defaultdict(int)
    for type_id, name, props in texts:
        words = by_type.get(type_id)
        if not words or not name or counts[type_id] >= TEXT_INSTANCES:
            continue
        counts[type_id] += 1
        for values in props.values():
            for text in values:
                for sentence in _SENTENCE.split(text):
                    sentence = sentence.strip()
                    if not SENTENCE_CHARS[0] <= len(sentence) <= SENTENCE_CHARS[1] or name not in sentence:
                        continue
                    labels = {label for w, label in words.items() if w in sentence}
                    if len(labels) == 1:
                        found[labels.pop()].append(Synthetic(sentence, "", name))
    out = []
    for label in sorted(found):
        pool = found[label]
        rng.shuffle(pool)
        out += [Synthetic(q.question, label, q.topic) for q in pool[:per_candidate]]
    return out


@dataclass(frozen=True)
class Synthetic:
    question: str
    label: str
    topic: str


def _wordings(c: SchemaCandidate, type_name: str, classes: Sequence[str], chinese: bool,
              neighbours: dict[str, list[str]] | None = None) -> list[str]:
    frames = list(FRAMES_ZH if chinese else FRAMES_EN)
    for k in classes:
        frames += (CLASS_FRAMES_ZH if chinese else CLASS_FRAMES_EN).get(k, ())
    phrases = [p.lower() if not chinese else p for p in c.phrases] or [c.name]
    # the phrases said in the network's other words for them (its own vectors' neighbours: 病因 -> 原因)
    phrases += [p.replace(word, other) for p in list(phrases) for word, others in (neighbours or {}).items()
                if word in p for other in others]
    phrases = list(dict.fromkeys(phrases))
    out = [f.replace("{p}", p).replace("{a}", type_name) for f in frames for p in phrases]
    return list(dict.fromkeys(" ".join(w.split()) for w in out))


def synthesise(profile: CandidateProfile, names: Sequence[tuple[str, str, str]], seed: int = 0,
               per_candidate: int = 24, classes: dict[str, Sequence[str]] | None = None,
               neighbours: dict[str, list[str]] | None = None) -> list[Synthetic]:
    """Up to ``per_candidate`` questions per candidate whose topic type has named instances (see the module
    docstring). ``classes``: label -> the answer classes it answers (from the zero-shot ranker's affinities);
    ``neighbours``: word of a phrase -> other words the network's texts use alike (:func:`phrase_neighbours`)."""
    rng = random.Random(seed)
    topics: dict[str, list[str]] = defaultdict(list)
    for type_id, _iid, name in names:
        if name:
            topics[type_id].append(str(name))
    chinese = profile.chinese
    out: list[Synthetic] = []
    for c in profile.candidates:
        pool = topics.get(c.topic_type)
        if not pool:
            continue
        answer_name = profile.type_names.get(c.answer_type, c.name) if c.answer_type else c.name
        wordings = _wordings(c, answer_name if chinese else answer_name.lower(), (classes or {}).get(c.label, ()),
                             chinese, neighbours)
        rng.shuffle(wordings)
        for wording in wordings[:per_candidate]:
            topic = rng.choice(pool)
            out.append(Synthetic(wording.replace("{t}", topic), c.label, topic))
    return out

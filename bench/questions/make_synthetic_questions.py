"""One-relation evaluation questions over the synthetic large-schema network (6,000 relation types).

How the file is built (``python -m bench.questions.make_synthetic_questions`` rewrites it, the same each run):

* The network is ``kgrag.network.loaders.synthetic.synthetic_network()`` with its defaults: object types named
  ``<Qualifier> <Noun>`` (``Hospital Patient``), one instance per type (``Hospital Patient #1``), relation types
  named by a verb phrase (``treats``, ``ships to``, ``located in``) and one link per relation type.
* ``random.Random(7)`` picks :data:`N_QUESTIONS` distinct relation types (self-loops left out), a direction for
  each (``out``: the topic is the source instance and the question asks for the target; ``in``: the other way)
  and one English template for that verb's form and direction from :data:`TEMPLATES`. Every question names the
  topic instance, the verb phrase and the type asked for, so it has one reading: no other relation type joins
  the same two types with the same verb.
* Verbs are conjugated from :data:`VERB_FORMS` (base form, third person, passive phrase where English has a
  natural one); the state phrases (``located in``, ``part of`` …) take "is".
* The gold answers are the display names of the instances the topic's links of that relation type reach in
  that direction (never written by hand).

Each line is ``{"question", "answers", "topic", "kind", "relation", "direction"}``; ``kind`` is the template
family, ``<verb|state>_<out|in>``.
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from pathlib import Path

from kgrag.network.loaders.synthetic import synthetic_network

__all__ = ["STATE_PHRASES", "TEMPLATES", "VERB_FORMS", "build", "main"]

HERE = Path(__file__).resolve().parent
PATH = HERE / "synthetic.jsonl"
SEED = 7
N_QUESTIONS = 200

#: verb (the relation type's name) -> (base form, passive phrase or "" where the passive reads badly)
VERB_FORMS: dict[str, tuple[str, str]] = {
    "owns": ("own", "owned by"), "manages": ("manage", "managed by"), "employs": ("employ", "employed by"),
    "supplies": ("supply", "supplied by"), "treats": ("treat", "treated by"), "ships to": ("ship to", ""),
    "bills": ("bill", "billed by"), "insures": ("insure", "insured by"), "audits": ("audit", "audited by"),
    "schedules": ("schedule", "scheduled by"), "approves": ("approve", "approved by"),
    "reports to": ("report to", ""), "produces": ("produce", "produced by"),
    "monitors": ("monitor", "monitored by"), "contains": ("contain", "contained in"),
    "references": ("reference", "referenced by"), "inspects": ("inspect", "inspected by"),
    "delivers": ("deliver", "delivered by"), "registers": ("register", "registered by"),
    "hosts": ("host", "hosted by"), "requires": ("require", "required by"),
    "replaces": ("replace", "replaced by"), "sponsors": ("sponsor", "sponsored by"),
    "transports": ("transport", "transported by"), "stores": ("store", "stored by"),
    "licenses": ("license", "licensed by"), "belongs to": ("belong to", ""), "depends on": ("depend on", ""),
    "serves": ("serve", "served by"), "trains": ("train", "trained by"), "certifies": ("certify", "certified by"),
    "purchases": ("purchase", "purchased by"), "sells to": ("sell to", ""),
    "maintains": ("maintain", "maintained by"), "reviews": ("review", "reviewed by"),
}  # fmt: skip
#: relation names that describe a state and take "is"
STATE_PHRASES = frozenset({"located in", "part of", "assigned to", "funded by", "operated by"})

# Placeholders: {s} the source instance, {t} the target instance, {S}/{T} the source/target type name
# ({Sl}/{Tl} lower case), {v} the verb as named (third person), {base} its base form, {pas} its passive phrase.
TEMPLATES: dict[str, tuple[str, ...]] = {
    "verb_out": (
        "Which {T} does {s} {base}?",
        "{s} {v} which {T}?",
        "what {Tl} does {s} {base}",
        "Name the {T} that {s} {v}.",
    ),
    "verb_in": (
        "Which {S} {v} {t}?",
        "what {Sl} {v} {t}",
        "Find the {S} that {v} {t}.",
        "{t} is {pas} which {S}?",  # only where the verb has a passive phrase
    ),
    "state_out": (
        "Which {T} is {s} {v}?",
        "{s} is {v} which {T}?",
        "what {Tl} is {s} {v}",
        "Name the {T} that {s} is {v}.",
    ),
    "state_in": (
        "Which {S} is {v} {t}?",
        "what {Sl} is {v} {t}",
        "Find the {S} that is {v} {t}.",
        "{t} has which {S} {v} it?",
    ),
}


def _templates(verb: str, direction: str) -> tuple[str, tuple[str, ...]]:
    if verb in STATE_PHRASES:
        return f"state_{direction}", TEMPLATES[f"state_{direction}"]
    kind = f"verb_{direction}"
    if VERB_FORMS[verb][1]:
        return kind, TEMPLATES[kind]
    return kind, tuple(t for t in TEMPLATES[kind] if "{pas}" not in t)


def render(template: str, verb: str, source: str, target: str, source_type: str, target_type: str) -> str:
    base, passive = VERB_FORMS.get(verb, (verb, ""))
    return template.format(
        s=source, t=target, S=source_type, T=target_type, Sl=source_type.lower(), Tl=target_type.lower(),
        v=verb, base=base, pas=passive,
    )  # fmt: skip


def build() -> list[dict]:
    """The question rows (deterministic)."""
    network, instances, links = synthetic_network()
    names = {i.id: str(i.properties["name"]) for i in instances}
    type_of = {i.id: i.object_type_id for i in instances}
    type_names = {ot.id: ot.name for ot in network.object_types}
    reached: dict[tuple[str, str], dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for link in links:
        reached[(link.relation_type_id, "out")][link.source_id].add(link.target_id)
        reached[(link.relation_type_id, "in")][link.target_id].add(link.source_id)
    candidates = [rt for rt in network.relation_types if rt.source_object_type_id != rt.target_object_type_id]
    rng = random.Random(SEED)
    rows: list[dict] = []
    for rt in rng.sample(candidates, len(candidates)):
        if len(rows) == N_QUESTIONS:
            break
        direction = rng.choice(("out", "in"))
        out_links = reached[(rt.id, "out")]
        if not out_links:
            continue
        source_id = sorted(out_links)[0]
        target_id = sorted(out_links[source_id])[0]
        topic_id = source_id if direction == "out" else target_id
        answers = sorted({names[i] for i in reached[(rt.id, direction)][topic_id]})
        if not answers:
            continue
        kind, templates = _templates(rt.name, direction)
        template = rng.choice(templates)
        question = render(
            template, rt.name, names[source_id], names[target_id],
            type_names[type_of[source_id]], type_names[type_of[target_id]],
        )  # fmt: skip
        rows.append(
            {
                "question": question,
                "answers": answers,
                "topic": names[topic_id],
                "kind": kind,
                "relation": rt.id,
                "direction": direction,
            }
        )
    return rows


def dumps(rows: list[dict]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def main() -> None:
    rows = build()
    PATH.write_text(dumps(rows), encoding="utf-8")
    print(f"{PATH.relative_to(HERE.parents[1])}: {len(rows)} questions")


if __name__ == "__main__":
    main()

"""Contextual recall (``kgrag.search.pipeline.context_search``) on the medical network.

Figures, in one run:
1. **Storage-form recall@5 per variant kind**: real stored names (Disease, Symptom, Drug; a seeded sample of
   ``--per-kind`` names per type) turned into user-style variants one kind at a time (``exact``, ``drop_char``,
   ``swap_chars``, ``no_punct``, ``substring``, ``mixed_script``); the query is the bare variant; a hit is the
   stored name among the first 5 ``form``s over the response's keyword mappings (mappings in list order, forms
   in list order). A variant equal to another stored name of the same type is skipped (counted).
2. **Keyword -> type mapping precision**: the spec's example (上气道梗阻有哪些症状 -> Disease) and ``--questions``
   templated questions over real names, balanced over Disease / Drug / Symptom / Check; precision = the
   highest-confidence mapping's ``object_type_id`` is the expected type; plus questions with no mapping and the
   entity-extraction exact rate (the name verbatim among ``extraction.entities``).
3. **Latency**: p50/p95 of ``context_search`` over those questions, in-process, and of plain ``kn_search`` on the
   same questions in the same run (the baseline; calls alternate so neither always runs second).
Run: ``python -m bench.contextual_recall [--per-kind 150] [--questions 200] [--seed 0] [--db PATH]``.
"""

from __future__ import annotations

import argparse
import math
import random
import re
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.common import percentiles, write_result
from kgrag.search.context_models import ContextualKnowledge, KeywordMapping

Variant = Callable[[str, random.Random], str | None]

RECALL_TYPES = ("Disease", "Symptom", "Drug")
ALL_TYPES = ("Disease", "Symptom", "Drug", "Check", "Food", "Recipe", "Department")
TOP_K = 5
PUNCT = "、，,（）()·•・-－—/／ 　：:；;“”\"'＇"
_PUNCT_RE = re.compile("[" + re.escape(PUNCT) + "]")
_CJK = r"\u4e00-\u9fff"
_LATIN_RUN = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+\-]*")
#: what a user leaves out: a bracketed qualifier holding Latin letters/digits ((pH4), (Vero细胞), (8-11)) anywhere,
#: or a trailing Latin/digit run (0.25g, -2)
_DROPPABLE = re.compile(r"\s*[(（\[][^()（）\[\]]*[A-Za-z0-9][^()（）\[\]]*[)）\]]|[\s\-－]*[A-Za-z0-9][A-Za-z0-9.+\-/%]*$")
_MOJIBAKE = re.compile(r"[\u00c0-\u00ff]")
TEMPLATES: dict[str, tuple[str, ...]] = {
    "Disease": ("{}有哪些症状", "{}应该做什么检查"),
    "Drug": ("{}的生产厂家", "{}治疗什么病"),
    "Symptom": ("{}是什么病的症状",),
    "Check": ("{}检查什么",),
}
SPEC_EXAMPLES = (("上气道梗阻有哪些症状", "Disease"), ("上气道阻塞有哪些症状", "Disease"))
SPLIT = ("medical network names; variants generated from stored names; nothing excluded except skips counted in "
         "figures (and mojibake / '...'-truncated stored names, counted in figures.names); questions use names "
         "stored under one object type only")


def progress(message: str) -> None:
    print(f"[bench.contextual_recall] {message}", file=sys.stderr, flush=True)


# -- variant generators: (stored name, rng) -> user-style variant, or None when the kind does not apply ------------


def exact(name: str, rng: random.Random) -> str | None:
    """The stored name itself (the baseline kind)."""
    return name


def drop_char(name: str, rng: random.Random) -> str | None:
    """Delete one inner character (names of 4+ characters)."""
    if len(name) < 4:
        return None
    i = rng.randrange(1, len(name) - 1)
    return name[:i] + name[i + 1:]


def swap_chars(name: str, rng: random.Random) -> str | None:
    """Swap two different adjacent inner characters (names of 4+ characters)."""
    spots = [i for i in range(1, len(name) - 2) if name[i] != name[i + 1]]
    if len(name) < 4 or not spots:
        return None
    i = rng.choice(spots)
    return name[:i] + name[i + 1] + name[i] + name[i + 2:]


def no_punct(name: str, rng: random.Random) -> str | None:
    """Remove punctuation and spaces (上、下气道梗阻 -> 上下气道梗阻); None when the name has none."""
    out = _PUNCT_RE.sub("", name)
    return out if out != name and len(out) >= 2 else None


def substring(name: str, rng: random.Random) -> str | None:
    """A contiguous proper substring of >= 60 % of the name's length and >= 3 characters."""
    low = max(3, math.ceil(0.6 * len(name)))
    if low > len(name) - 1:
        return None
    size = rng.randint(low, len(name) - 1)
    start = rng.randint(0, len(name) - size)
    return name[start:start + size]


def is_mixed_script(name: str) -> bool:
    """The name mixes ASCII letters/digits and Chinese characters (维生素B1片)."""
    return bool(re.search(r"[A-Za-z0-9]", name)) and bool(re.search(f"[{_CJK}]", name))


def mixed_script_forms(name: str) -> dict[str, str]:
    """Every applicable mixed-script variant, by transform: ``case`` (Latin runs lower-cased, or upper-cased when
    already lower: 维生素B1片 -> 维生素b1片), ``drop`` (a bracketed Latin/digit qualifier or a trailing Latin/digit
    run left out: 阿莫西林胶囊0.25g -> 阿莫西林胶囊, 人用狂犬病疫苗(Vero细胞) -> 人用狂犬病疫苗) and ``space`` (a space
    between the Latin/digit runs and the Chinese: 维生素 B1 片)."""
    if not is_mixed_script(name):
        return {}
    forms: dict[str, str] = {}
    if re.search(r"[A-Za-z]", name):
        forms["case"] = _LATIN_RUN.sub(lambda m: m[0].upper() if m[0].lower() == m[0] else m[0].lower(), name)
    dropped = _DROPPABLE.sub("", name).strip()
    if dropped != name and len(re.findall(f"[{_CJK}]", dropped)) >= 2:
        forms["drop"] = dropped
    forms["space"] = re.sub(f"(?<=[{_CJK}])(?=[A-Za-z0-9])|(?<=[A-Za-z0-9])(?=[{_CJK}])", " ", name)
    return {k: v for k, v in forms.items() if v != name}


def mixed_script(name: str, rng: random.Random) -> str | None:
    """One of :func:`mixed_script_forms`, chosen at random; None when the name is not mixed-script."""
    forms = mixed_script_forms(name)
    return forms[rng.choice(sorted(forms))] if forms else None


VARIANTS: dict[str, Variant] = {
    "exact": exact,
    "drop_char": drop_char,
    "swap_chars": swap_chars,
    "no_punct": no_punct,
    "substring": substring,
    "mixed_script": mixed_script,
}


def usable(name: str) -> str | None:
    """Why a stored name is left out of the samples (``mojibake``, ``truncated``), or None to keep it."""
    if _MOJIBAKE.search(name):
        return "mojibake"
    if name.endswith(("...", "…")):
        return "truncated"
    return None


@dataclass
class Cases:
    """The variant cases of one (type, kind): (stored name, variant) pairs and the counts around them."""

    pairs: list[tuple[str, str]]
    qualified: int  # names of the pool the kind applies to
    skipped: int  # variants equal to another stored name of the type, passed over while sampling


def make_cases(names: Sequence[str], variant: Variant, n: int, rng: random.Random, stored: set[str]) -> Cases:
    """Up to ``n`` (name, variant) pairs, walking ``names`` in order (shuffle them first) and skipping variants
    that equal another stored name (``stored``: every name of the type)."""
    candidates = [(name, v) for name in names if (v := variant(name, rng)) is not None]
    pairs: list[tuple[str, str]] = []
    skipped = 0
    for name, v in candidates:
        if len(pairs) >= n:
            break
        if v != name and v in stored:
            skipped += 1
            continue
        pairs.append((name, v))
    return Cases(pairs, len(candidates), skipped)


# -- metrics ------------------------------------------------------------------------------------------------------


def top_forms(mappings: Iterable[KeywordMapping], k: int = TOP_K) -> list[str]:
    """The first ``k`` storage forms over the mappings (mappings in list order, forms in list order)."""
    return [f.form for m in mappings for f in m.storage_forms][:k]


def top_mapping(mappings: Iterable[KeywordMapping]) -> KeywordMapping | None:
    """The highest-confidence mapping that names an object type (the first on ties), or None."""
    typed = [m for m in mappings if m.object_type_id is not None]
    return max(typed, key=lambda m: m.match_confidence) if typed else None


def rate(hits: int, n: int) -> dict:
    return {"rate": round(hits / n, 4) if n else None, "hits": hits, "n": n}


def recall_figures(hits_by_type: dict[str, list[bool]], cases_by_type: dict[str, Cases]) -> dict:
    """Recall@5 of one kind: overall and per type, with numerator/denominator, qualified names and skips."""
    out: dict = {}
    for type_id, hits in hits_by_type.items():
        cases = cases_by_type[type_id]
        out[type_id] = {**rate(sum(hits), len(hits)), "qualified": cases.qualified, "skipped": cases.skipped}
    total = [h for hits in hits_by_type.values() for h in hits]
    return {"all": {**rate(sum(total), len(total)), "qualified": sum(c.qualified for c in cases_by_type.values()),
                    "skipped": sum(c.skipped for c in cases_by_type.values())}, **out}


@dataclass
class Question:
    text: str
    name: str
    expected: str


def single_type_names(names_by_type: dict[str, Sequence[str]]) -> dict[str, list[str]]:
    """Per type, the (sorted) names stored under that type only."""
    seen: dict[str, int] = {}
    for names in names_by_type.values():
        for name in set(names):
            seen[name] = seen.get(name, 0) + 1
    return {t: sorted(n for n in set(names) if seen[n] == 1) for t, names in names_by_type.items()}


def make_questions(names_by_type: dict[str, Sequence[str]], n: int, seed: int) -> list[Question]:
    """``n`` questions from :data:`TEMPLATES`, round-robin over the expected types (Disease, Drug, Symptom,
    Check) and over each type's templates, each on a different name drawn at random."""
    rng = random.Random(f"{seed}:questions")
    pools = {t: rng.sample(sorted(names_by_type[t]), len(names_by_type[t])) for t in TEMPLATES}
    types = list(TEMPLATES)
    out = []
    for i in range(n):
        expected = types[i % len(types)]
        templates = TEMPLATES[expected]
        name = pools[expected][i // len(types)]
        out.append(Question(templates[(i // len(types)) % len(templates)].format(name), name, expected))
    return out


def judge(question: Question, ck: ContextualKnowledge | None) -> dict:
    """Per question: the top mapping's type, whether it is the expected one, whether the name was extracted
    verbatim as an entity, and the type of the mapping whose keyword is the name (when there is one)."""
    mappings = ck.keyword_mappings if ck else []
    top = top_mapping(mappings)
    entities = [e.text for e in ck.extraction.entities] if ck and ck.extraction else []
    own = next((m.object_type_id for m in mappings if m.keyword == question.name), None)
    return {"top_type": top.object_type_id if top else None, "correct": bool(top and top.object_type_id ==
            question.expected), "no_mapping": top is None, "entity_exact": question.name in entities,
            "name_keyword_type": own, "source": ck.extraction.source if ck and ck.extraction else None,
            "errors": bool(ck and ck.errors)}


def mapping_figures(questions: Sequence[Question], verdicts: Sequence[dict]) -> dict:
    """Precision (top mapping type == expected), no-mapping count, entity exact rate, the mapping of the keyword
    that is the name, responses with ``errors`` and where the extraction came from (rules / llm), overall and per
    type."""

    def block(rows: list[tuple[Question, dict]]) -> dict:
        return {"precision": rate(sum(v["correct"] for _, v in rows), len(rows)),
                "no_mapping": sum(v["no_mapping"] for _, v in rows),
                "entity_exact": rate(sum(v["entity_exact"] for _, v in rows), len(rows)),
                "name_keyword_type_correct": rate(sum(v["name_keyword_type"] == q.expected for q, v in rows),
                                                  len(rows)),
                "with_errors": sum(v["errors"] for _, v in rows),
                "extraction_source": dict(Counter(str(v["source"]) for _, v in rows))}

    rows = list(zip(questions, verdicts, strict=True))
    return {"all": block(rows), **{t: block([r for r in rows if r[0].expected == t]) for t in TEMPLATES}}


# -- the run ------------------------------------------------------------------------------------------------------


def timed(fn: Callable[[], object]) -> tuple[object, float]:
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--per-kind", type=int, default=150, help="names per (type, variant kind)")
    parser.add_argument("--questions", type=int, default=200, help="templated questions for the type mapping")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--db", type=Path, help="reuse this SQLite file (loads the medical network only if absent)")
    args = parser.parse_args(argv)

    from kgrag.network.loaders.registry import load_named
    from kgrag.network.store import NetworkStore
    from kgrag.search.kn_models import KnSearchRequest
    from kgrag.search.pipeline import context_search, kn_search  # context_search: the feature under test

    db = args.db or Path(tempfile.mkdtemp(prefix="kgrag-bench-ctx-")) / "kn.db"
    fresh = not db.exists()
    store = NetworkStore(f"sqlite:///{db}")
    load_s = None
    if fresh:
        progress(f"loading the medical network into {db}")
        _, load_s = timed(lambda: load_named("medical", store))
    stored = {t: [str(h.properties.get("name", "")) for h in store.query_instances("medical", t, None, limit=10**6)]
              for t in ALL_TYPES}
    names_fig: dict = {}
    pools: dict[str, list[str]] = {}
    for t in ALL_TYPES:
        reasons = [usable(n) for n in stored[t]]
        pools[t] = sorted(n for n, r in zip(stored[t], reasons, strict=True) if n and r is None)
        names_fig[t] = {"stored": len(stored[t]), "mojibake": reasons.count("mojibake"),
                        "truncated": reasons.count("truncated")}

    def ask(query: str) -> ContextualKnowledge | None:
        return context_search(KnSearchRequest(query=query, kn_id="medical"), store).contextual_knowledge

    for q in ("感冒", "头痛发热", "阿莫西林有什么副作用"):  # warm-up: models, indexes, SQLite pages
        ask(q)
        kn_search(KnSearchRequest(query=q, kn_id="medical"), store)

    # 1. storage-form recall@5
    recall: dict = {}
    by_transform: dict[str, list[bool]] = {}
    variant_s: list[float] = []
    for kind, variant in VARIANTS.items():
        hits_by_type: dict[str, list[bool]] = {}
        cases_by_type: dict[str, Cases] = {}
        for t in RECALL_TYPES:
            order = random.Random(f"{args.seed}:{t}").sample(pools[t], len(pools[t]))
            cases = make_cases(order, variant, args.per_kind, random.Random(f"{args.seed}:{t}:{kind}"),
                               set(stored[t]))
            hits = []
            for name, query in cases.pairs:
                ck, s = timed(lambda q=query: ask(q))
                variant_s.append(s)
                hit = name in top_forms(ck.keyword_mappings if ck else [])
                hits.append(hit)
                if kind == "mixed_script":
                    transform = next(k for k, v in mixed_script_forms(name).items() if v == query)
                    by_transform.setdefault(transform, []).append(hit)
            hits_by_type[t], cases_by_type[t] = hits, cases
        recall[kind] = recall_figures(hits_by_type, cases_by_type)
        progress(f"recall@{TOP_K} {kind}: {recall[kind]['all']}")
    recall["mixed_script"]["by_transform"] = {k: rate(sum(v), len(v)) for k, v in sorted(by_transform.items())}

    # 2. keyword -> type mapping, 3. latency (context_search and kn_search alternate, same questions)
    examples = []
    for query, expected in SPEC_EXAMPLES:
        ck = ask(query)
        top = top_mapping(ck.keyword_mappings if ck else [])
        examples.append({"query": query, "expected": expected, "top_type": top.object_type_id if top else None,
                         "top_keyword": top.keyword if top else None, "correct": bool(top and
                         top.object_type_id == expected), "top_forms": top_forms(ck.keyword_mappings if ck else [])})
    single = single_type_names({t: pools[t] for t in ALL_TYPES})
    questions = make_questions(single, args.questions, args.seed)
    ctx_s: list[float] = []
    kn_s: list[float] = []
    verdicts = []
    for i, q in enumerate(questions):
        req = KnSearchRequest(query=q.text, kn_id="medical")
        if i % 2:
            kn_s.append(timed(lambda r=req: kn_search(r, store))[1])
        resp, s = timed(lambda r=req: context_search(r, store))
        ctx_s.append(s)
        if not i % 2:
            kn_s.append(timed(lambda r=req: kn_search(r, store))[1])
        verdicts.append(judge(q, resp.contextual_knowledge))
    mapping = mapping_figures(questions, verdicts)
    progress(f"type mapping: {mapping['all']}")

    figures = {
        "storage_form_recall_at_5": recall,
        "keyword_type_mapping": {
            "spec_examples": examples,
            "diseases_containing_气道梗阻": sorted(n for n in stored["Disease"] if "气道梗阻" in n),
            "generated_questions": mapping,
            "single_type_names": {t: len(single[t]) for t in TEMPLATES},
        },
        "latency": {"context_search_questions": percentiles(ctx_s), "kn_search_questions": percentiles(kn_s),
                    "context_search_variant_queries": percentiles(variant_s)},
        "names": names_fig,
        "load_seconds": round(load_s, 1) if load_s is not None else None,
    }
    ratio = {"context_search_vs_kn_search_p50": round(percentiles(ctx_s)["p50_ms"] / percentiles(kn_s)["p50_ms"], 3)}
    write_result("contextual_recall", figures, baseline={"kn_search_questions": percentiles(kn_s)}, ratio=ratio,
                 split=SPLIT, n=len(variant_s) + len(questions))


if __name__ == "__main__":
    main()

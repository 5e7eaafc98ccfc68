"""Alias recall: does contextual recall map another name of a disease (心梗) to its stored name (心肌梗死)?

How the cases are built: the medical network is built from the data (``medical_from_diseases``), whose Disease
``aliases`` come from the disease texts (``kgrag.network.text.aliases.alias_index``: 又称/俗称/简称 … statements). Every
(disease, alias) pair it records is a candidate case. Exclusions (counted in ``figures.cases.excluded``): an alias
that is itself a stored name of any object type (the exact form would rightly win), and an alias recorded for
more than one disease (no single right answer).

Split: the pairs are shuffled with ``--seed`` and cut in half. The *held-out* half is REMOVED from the stored
aliases (``medical_from_diseases(exclude_aliases=...)``) before the network is loaded, so its figure measures
recovery of names the network does not record (embedding neighbours, fuzzy and contains forms); the *recorded*
half stays stored, so its figure measures the alias strategy itself. ``--n`` cases are sampled from each half
(seeded; all when fewer). Denominator: the sampled cases of a half.

Measure: hit@5 = the disease's stored name among the first 5 storage forms of
``context_search(KnSearchRequest(query=f"{alias}有哪些症状", kn_id="medical"), store)`` — the forms of the
response's keyword mappings flattened in list order (``bench.contextual_recall.top_forms``). Each case is run
in the same process on the same store in every variant, the order rotating: ``after`` (every strategy),
``before`` (the other-name strategies of :mod:`kgrag.search.other_names` off: ``ContextConfig(other_names=
False)`` — the baseline) and, with ``--alias-baseline``, ``without_alias_strategy`` (also no alias property
searched: ``kgrag.search.storage_forms.alias_field`` answers None). ``hard`` is the subset where neither the alias
nor the stored name contains the other (contains search cannot find them). Per figure also: how the hits were
found (the match type of the hitting form; ``by_strategy``: those hits as a share of the cases, i.e. recall@5 per
strategy) and why misses missed (the alias was not extracted as a keyword; the disease was found below rank 5;
not found). Latency p50/p95 per variant (LLM-free: ``use_llm=False``).

The held-out aliases still occur in the disease texts they were extracted from, and the "domain" embeddings
(``Settings.zh_embedder``) are trained on the network's texts, so vectors have seen them in context: the held-out
figure is an upper estimate for names absent from every text.

Run: ``python -m bench.aliases [--n 300] [--seed 0] [--db PATH] [--alias-baseline]`` (``--db``: a SQLite file, loaded only when
absent — it must have been built by this benchmark with the same seed; checked). Writes
``bench/results/aliases.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import percentiles, write_result

TOP_K = 5
MATCH_TYPES = ("exact", "alias", "standard_name", "abbreviation", "segments", "ngram", "contains", "fuzzy")
#: the variants, each a (other-name strategies, alias strategy) setting
VARIANTS = {"after": (True, True), "before": (False, True), "without_alias_strategy": (False, False)}
TEMPLATE = "{}有哪些症状"
KN_ID = "medical"
SPLIT = ("(disease, alias) pairs extracted from the medical disease texts; seeded halves: held-out pairs removed "
         "from the stored aliases before loading, recorded pairs kept; excluded: aliases that are stored names of "
         "any type, aliases of more than one disease")


def progress(message: str) -> None:
    print(f"[bench.aliases] {message}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Case:
    alias: str
    disease: str

    @property
    def hard(self) -> bool:
        """Neither name contains the other (contains search cannot find the disease)."""
        return self.alias not in self.disease and self.disease not in self.alias


def alias_pairs(instances: Sequence[Any]) -> list[tuple[str, str]]:
    """``(disease name, alias)`` of every alias a built network records, sorted."""
    return sorted((str(i.properties["name"]), a) for i in instances
                  if i.object_type_id == "Disease" for a in i.properties.get("aliases", []))


def make_cases(pairs: Sequence[tuple[str, str]], stored_names: set[str], seed: int,
               n: int) -> tuple[dict[str, list[Case]], set[tuple[str, str]], dict[str, int]]:
    """The seeded split: ``({"recorded": cases, "held_out": cases}, held-out pairs to exclude, exclusion
    counts)``. The halves are cut over all pairs (so exclusions do not move the cut); ``n`` cases are then
    sampled from each half's usable pairs."""
    order = sorted(pairs)
    random.Random(f"{seed}:split").shuffle(order)
    held = set(order[: len(order) // 2])
    owners = Counter(alias for _, alias in pairs)
    excluded = {"alias_is_a_stored_name": 0, "alias_of_several_diseases": 0}
    halves: dict[str, list[Case]] = {"recorded": [], "held_out": []}
    for disease, alias in order:
        if alias in stored_names:
            excluded["alias_is_a_stored_name"] += 1
            continue
        if owners[alias] > 1:
            excluded["alias_of_several_diseases"] += 1
            continue
        halves["held_out" if (disease, alias) in held else "recorded"].append(Case(alias, disease))
    rng = random.Random(f"{seed}:sample")
    sampled = {k: sorted(rng.sample(v, min(n, len(v))), key=lambda c: (c.disease, c.alias))
               for k, v in halves.items()}
    return sampled, held, excluded


@contextlib.contextmanager
def without_alias_strategy() -> Iterator[None]:
    """The baseline: no object type has an alias property as far as storage forms are concerned."""
    from kgrag.search import storage_forms

    original = storage_forms.alias_field
    storage_forms.alias_field = lambda ot: None  # type: ignore[assignment]
    try:
        yield
    finally:
        storage_forms.alias_field = original  # type: ignore[assignment]


def judge(case: Case, knowledge: Any) -> dict:
    """Hit@5 of one case, how it hit (the hitting form's match type) or why it missed."""
    from bench.contextual_recall import top_forms

    mappings = knowledge.keyword_mappings if knowledge is not None else []
    forms = [f for m in mappings for f in m.storage_forms]
    top = top_forms(mappings, TOP_K)
    hit = case.disease in top
    entities = [e.text for e in knowledge.extraction.entities] if knowledge is not None and knowledge.extraction \
        else []
    if hit:
        how = next(f.match_type for f in forms if f.form == case.disease)
    elif case.alias not in entities:
        how = "alias_not_a_keyword"
    elif any(f.form == case.disease for f in forms):
        how = "below_rank_5"
    else:
        how = "not_found"
    return {"hit": hit, "how": how}


def figure(cases: Sequence[Case], verdicts: Sequence[dict]) -> dict:
    def block(rows: list[tuple[Case, dict]]) -> dict:
        hits = sum(v["hit"] for _, v in rows)
        how = Counter(v["how"] for _, v in rows)
        return {"hit_at_5": round(hits / len(rows), 4) if rows else None, "hits": hits, "n": len(rows),
                "how": dict(sorted(how.items())),
                "by_strategy": {k: round(how[k] / len(rows), 4) for k in sorted(how) if k in MATCH_TYPES}}

    rows = list(zip(cases, verdicts, strict=True))
    return {"all": block(rows), "hard": block([r for r in rows if r[0].hard])}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=300, help="cases sampled from each half")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--db", type=Path, help="SQLite file to reuse (loaded only when absent)")
    parser.add_argument("--alias-baseline", action="store_true",
                        help="also run without the alias strategy (and without the other-name strategies)")
    args = parser.parse_args(argv)

    from kgrag.config import get_settings
    from kgrag.data.medical import read_diseases
    from kgrag.network.loaders.medical import medical_from_diseases
    from kgrag.network.store import NetworkStore
    from kgrag.search.context_models import ContextConfig
    from kgrag.search.kn_models import KnSearchRequest
    from kgrag.search.pipeline import context_search

    folder = Path(get_settings().data_dir) / "medical" / "diseases"
    records = read_diseases(folder).records
    progress(f"building the network from {len(records)} records")
    _, full_instances, _ = medical_from_diseases(records, KN_ID)
    pairs = alias_pairs(full_instances)
    stored_names = {str(i.properties.get("name", "")) for i in full_instances}
    cases, held, excluded = make_cases(pairs, stored_names, args.seed, args.n)

    db = args.db or Path(tempfile.mkdtemp(prefix="kgrag-bench-aliases-")) / "kn.db"
    store = NetworkStore(f"sqlite:///{db}")
    load_s = None
    if KN_ID not in {k for k, _ in store.list_networks()}:
        progress(f"loading the network without the {len(held)} held-out pairs into {db} (trains domain "
                 "embeddings when none exist: minutes)")
        t = time.perf_counter()
        from kgrag.network.text.embedding import network_embedder

        network, instances, links = medical_from_diseases(records, KN_ID, exclude_aliases=held)
        store.load(network, instances, links, embedder=network_embedder(network, instances, get_settings(),
                                                                         log=progress))
        load_s = time.perf_counter() - t
    recorded_now = {(str(h.properties["name"]), a) for h in store.query_instances(
        KN_ID, "Disease", None, limit=10**6) for a in h.properties.get("aliases", [])}
    leaked = [c for c in cases["held_out"] if (c.disease, c.alias) in recorded_now]
    missing = [c for c in cases["recorded"] if (c.disease, c.alias) not in recorded_now]
    if leaked or missing:
        raise SystemExit(f"{db} was not built with --seed {args.seed}: {len(leaked)} held-out pairs recorded, "
                         f"{len(missing)} recorded pairs missing; use another --db")

    def ask(alias: str, other_names: bool = True) -> Any:
        request = KnSearchRequest(query=TEMPLATE.format(alias), kn_id=KN_ID,
                                  context_config=ContextConfig(other_names=other_names))
        return context_search(request, store, use_llm=False).contextual_knowledge

    t = time.perf_counter()
    ask("某某某病")  # builds the other-name indexes of every type (once per network version)
    index_s = time.perf_counter() - t
    for warm in ("感冒", "心肌梗死"):
        ask(warm)
    figures: dict[str, Any] = {}
    variants = tuple(v for v in VARIANTS if args.alias_baseline or v != "without_alias_strategy")
    latency: dict[str, list[float]] = {v: [] for v in variants}
    alias_found_held_out = 0
    for half, half_cases in cases.items():
        verdicts: dict[str, list[dict]] = {v: [] for v in variants}
        for i, case in enumerate(half_cases):
            # both variants per case, the order alternating, so neither always meets cold caches
            for variant in variants[i % len(variants):] + variants[:i % len(variants)]:
                other_names, alias = VARIANTS[variant]
                t = time.perf_counter()
                with contextlib.nullcontext() if alias else without_alias_strategy():
                    knowledge = ask(case.alias, other_names)
                latency[variant].append(time.perf_counter() - t)
                verdicts[variant].append(judge(case, knowledge))
                if half == "held_out" and variant == "after" and knowledge is not None and any(
                        f.match_type == "alias" and f.form == case.disease and f.similarity == 1.0
                        for m in knowledge.keyword_mappings for f in m.storage_forms):
                    alias_found_held_out += 1
            if (i + 1) % 100 == 0:
                progress(f"{half}: {i + 1}/{len(half_cases)}")
        for variant in variants:
            figures.setdefault(half, {})[variant] = figure(half_cases, verdicts[variant])
            progress(f"{half} {variant}: {figures[half][variant]['all']}")

    rows = [(half, variant, sub, block) for half, by_variant in figures.items()
            for variant, by_sub in by_variant.items() for sub, block in by_sub.items()]
    print(f"{'half':<10} {'variant':<24} {'subset':<5} {'hit@5':>6} {'hits':>5} {'n':>5}  by strategy")
    for half, variant, sub, block in rows:
        rate = "-" if block["hit_at_5"] is None else f"{block['hit_at_5']:.3f}"
        by = " ".join(f"{k}={v:.3f}" for k, v in block["by_strategy"].items())
        print(f"{half:<10} {variant:<24} {sub:<5} {rate:>6} {block['hits']:>5} {block['n']:>5}  {by}")
    for variant, values in latency.items():
        print(f"latency {variant}: {percentiles(values)}")

    results = {
        "hit_at_5": figures,
        "cases": {"pairs": len(pairs), "diseases_with_aliases": len({d for d, _ in pairs}),
                  "held_out_pairs": len(held), "excluded": excluded,
                  "sampled": {k: len(v) for k, v in cases.items()},
                  "hard": {k: sum(c.hard for c in v) for k, v in cases.items()}},
        "held_out_found_as_recorded_alias": alias_found_held_out,
        "latency": {k: percentiles(v) for k, v in latency.items() if v},
        "examples": {k: [f"{c.alias} -> {c.disease}" for c in v[:10]] for k, v in cases.items()},
        "load_seconds": round(load_s, 1) if load_s is not None else None,
        "other_name_index_seconds": round(index_s, 1),
        "embedder": store.network_stats(KN_ID).get("embedder"),
    }
    baseline = {half: {"before": by["before"]["all"]["hit_at_5"]} for half, by in figures.items()}
    ratio = {half: round(by["after"]["all"]["hit_at_5"] / max(by["before"]["all"]["hit_at_5"] or 0.0, 1e-9), 3)
             for half, by in figures.items() if by["after"]["all"]["hit_at_5"] is not None}
    write_result("aliases", results, baseline=baseline, ratio=ratio, split=SPLIT,
                 n=sum(len(v) for v in cases.values()))


if __name__ == "__main__":
    main()

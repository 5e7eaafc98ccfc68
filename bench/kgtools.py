"""KG tools latency on MetaQA: ``get_relations`` / ``get_triples`` through :class:`KGSession`, embedded vs HTTP,
against a naive baseline (the spec's raw queries, no caching, no registry) in the same run.

Entities: a seeded sample of distinct topic entities of the MetaQA dev questions (``questions.jsonl``), each
asked about with its own dev question as the session's question. Per entity and backend:

- ``get_relations`` cold, in a fresh session (empty per-session caches): once by NAME (resolved by SPARQL)
  and once by id (``e.…``, no resolution), so the cost of name resolution shows;
- ``get_relations`` cached: the by-id session asked again for the same entity (per-entity relation cache);
- ``get_triples(entity, [first 2 relations returned])`` in that session (entity name query + out/in queries
  per relation, sampling, formatting).

The naive baseline is what the reference implementation does per call: the outgoing + incoming relation
SELECTs of spec §2.3.2 (``PREFIX ns:``, the FILTER lines, ``LIMIT 100``), URI → dotted names, the
meaningless-relation filter and a ``rank_bm25.BM25Okapi`` over the relations on whitespace tokens; for
triples the entity-name query (§3.5.1) and the §3.5.4 outgoing/incoming GROUP BY queries per relation, then
sampling and formatting. Both paths run on the same store objects: ``OxigraphStore`` (embedded, read-only)
and ``RemoteStore`` on a real ``oxigraph serve-read-only`` of the same directory, interleaved per entity with
the order alternating. An untimed pass over the whole sample warms the store first, so "cold" means cold
per-session caches, not a cold disk.

Checks (not timings): kgrag and naive agree on the set of relations of every entity, raw and after the
meaningless filter (before top-k), and names resolve to the topic's id.
Run: ``python -m bench.kgtools [--n 1000] [--n-http N]`` (prepares MetaQA in the work dir if needed).
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass

from rank_bm25 import BM25Okapi

from bench.common import percentiles, write_result
from bench.neighbourhood import ensure_prepared
from harness.servers.oxigraph_server import serve_read_only
from kgrag.config import get_settings
from kgrag.data.metaqa import METAQA_NS
from kgrag.data.spec import BUILTIN_SPECS
from kgrag.graph.oxigraph_store import OxigraphStore
from kgrag.graph.remote_store import RemoteStore
from kgrag.graph.store import GraphStore, Row
from kgrag.prep import steps
from kgrag.tools.client import KGClient
from kgrag.tools.config import KGToolsConfig
from kgrag.tools.factory import make_client
from kgrag.tools.filter import OfflineRelationFilter
from kgrag.tools.relations import RelationFilters
from kgrag.tools.session import NO_RELATIONS, KGSession

TARGETS_MS = {"get_relations_p50_embedded": 2.0, "get_relations_cached_p50": 0.1, "get_triples_p50_embedded": 10.0}
WARMUP = 10  # entities run through every path before timing (connections, query plans, lazy imports)


@dataclass(frozen=True)
class Topic:
    name: str
    entity_id: str
    question: str


def load_topics(n: int, seed: int) -> list[Topic]:
    """A seeded sample of distinct topic entities of the dev questions (first question mentioning each)."""
    settings = get_settings()
    out = settings.dataset_dir("metaqa")
    steps.prepare_questions("metaqa", settings.data_dir, out, steps.input_fingerprint("metaqa", settings.data_dir),
                            seed=settings.seed)
    first: dict[str, Topic] = {}
    for record in steps.read_prepared_questions(out):
        for name, local in zip(record["topic_ids"], record["topic_local_ids"], strict=True):
            if local.startswith("e.") and local not in first:
                first[local] = Topic(name=name, entity_id=local, question=record["text"])
    ids = sorted(first)
    return [first[i] for i in random.Random(seed).sample(ids, min(n, len(ids)))]


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    t = time.perf_counter()
    value = fn()
    return time.perf_counter() - t, value


def relations_of(text: str) -> list[str]:
    return [] if text == NO_RELATIONS else text.splitlines()


def triples_call(entity: str, relations: list[str]) -> str:
    return f'get_triples("{entity}", {json.dumps(relations)})'


# ---------------------------------------------------------------------------------------------- kgrag path
def kgrag_entity(client: KGClient, topic: Topic, config: KGToolsConfig, relation_filter: OfflineRelationFilter,
                 out: dict) -> list[str]:
    """Time one entity's kgrag calls into ``out``; returns the relations get_relations showed."""

    def session() -> KGSession:
        return KGSession(client, question=topic.question, config=config, relation_filter=relation_filter)

    named = session()
    seconds, _ = timed(lambda: named.run(f'get_relations("{topic.name}")'))
    out["by_name"].append(seconds)
    resolved = next(r["args"]["entity_resolved"] for r in named.trace if r["type"] == "tool_call")
    out["name_mismatches"] += resolved != topic.entity_id

    by_id = session()
    seconds, text = timed(lambda: by_id.run(f'get_relations("{topic.entity_id}")'))
    out["by_id"].append(seconds)
    seconds, again = timed(lambda: by_id.run(f'get_relations("{topic.entity_id}")'))
    out["cached"].append(seconds)
    assert again == text, f"cached get_relations differs for {topic.entity_id}"
    rels = relations_of(text)
    out["top"].append(rels)
    out["raw_sets"].append(set(by_id._rel_cache[topic.entity_id]))  # untimed, for the agreement check
    out["candidate_sets"].append(set(by_id.candidate_relations(topic.entity_id, 10**6)))

    two = rels[:2]
    seconds, _ = timed(lambda: by_id.run(triples_call(topic.entity_id, two)))
    out["triples"].append(seconds)
    out["triples_rel_counts"].append(len(two))
    out["errors"] += sum(r["type"] == "error" for r in named.trace + by_id.trace)
    return rels


# ---------------------------------------------------------------------------------------------- naive path
#: pyoxigraph 0.5.13 (and its server) cannot parse a prefixed name with two interior dots (``ns:a.b.c`` →
#: "expected ['0'..='9']"), so the spec's ``ns:type.object.name`` is written as a full IRI; all else as in the spec.
NAIVE_QUERIES = {
    "out_relations": """PREFIX ns: <{base}>
SELECT DISTINCT ?relation WHERE {{
    ns:{entity_id} ?relation ?tail .
    FILTER(isIRI(?relation))
    FILTER(STRSTARTS(STR(?relation), "{base}"))
}} LIMIT {limit}""",
    "in_relations": """PREFIX ns: <{base}>
SELECT DISTINCT ?relation WHERE {{
    ?head ?relation ns:{entity_id} .
    FILTER(isIRI(?relation))
    FILTER(STRSTARTS(STR(?relation), "{base}"))
}} LIMIT {limit}""",
    "entity_name": """PREFIX ns: <{base}>
SELECT ?name WHERE {{ ns:{entity_id} <{base}type.object.name> ?name . }}""",
    "out_triples": """PREFIX ns: <{base}>
SELECT ?tail (SAMPLE(?name_en) as ?preferred_name) (SAMPLE(?name_any) as ?fallback_name) WHERE {{
    ns:{entity_id} ns:{relation} ?tail .
    OPTIONAL {{ ?tail <{base}type.object.name> ?name_en . FILTER(LANGMATCHES(LANG(?name_en), 'en')) }}
    OPTIONAL {{ ?tail <{base}type.object.name> ?name_any . }}
}} GROUP BY ?tail LIMIT {limit}""",
    "in_triples": """PREFIX ns: <{base}>
SELECT ?head (SAMPLE(?name_en) as ?preferred_name) (SAMPLE(?name_any) as ?fallback_name) WHERE {{
    ?head ns:{relation} ns:{entity_id} .
    OPTIONAL {{ ?head <{base}type.object.name> ?name_en . FILTER(LANGMATCHES(LANG(?name_en), 'en')) }}
    OPTIONAL {{ ?head <{base}type.object.name> ?name_any . }}
}} GROUP BY ?head LIMIT {limit}""",
}


def naive_query(kind: str, **values: object) -> str:
    return NAIVE_QUERIES[kind].format(base=METAQA_NS, **values)


class NaiveTools:
    """The reference's per-call work, uncached: raw spec queries (ids pasted: they come from our own data)."""

    def __init__(self, store: GraphStore, config: KGToolsConfig, seed: int = 0) -> None:
        self.store = store
        self.config = config
        self.filters = RelationFilters()
        self.rng = random.Random(seed)

    def _dotted(self, uri: str) -> str:
        return uri[len(METAQA_NS):].replace("/", ".") if uri.startswith(METAQA_NS) else uri

    def raw_relations(self, entity_id: str) -> list[str]:
        limit = self.config.relation_query_limit
        rows = (self.store.select(naive_query("out_relations", entity_id=entity_id, limit=limit))
                + self.store.select(naive_query("in_relations", entity_id=entity_id, limit=limit)))
        return list(dict.fromkeys(self._dotted(r["relation"].value) for r in rows))

    def get_relations(self, entity_id: str, question: str) -> tuple[list[str], list[str]]:
        """(the filtered candidates before ranking, the top ``kg_top_k`` after BM25)."""
        relations = self.filters.drop_meaningless(self.raw_relations(entity_id))
        ranked = relations
        if relations and question.strip():
            corpus = [r.replace(".", " ").replace("_", " ").lower().split() for r in relations]
            scores = BM25Okapi(corpus).get_scores(question.lower().split())
            ranked = [relations[i] for i in sorted(range(len(relations)), key=lambda i: -scores[i])]
        return relations, ranked[: self.config.kg_top_k * 3][: self.config.kg_top_k]

    def _name(self, row: Row, var: str) -> tuple[str, str]:
        node = row[var].value
        name = row.get("preferred_name") or row.get("fallback_name")
        return (name.value if name is not None else node), self._dotted(node)

    def get_triples(self, entity_id: str, relations: list[str]) -> str:
        names = self.store.select(naive_query("entity_name", entity_id=entity_id))
        english = [r["name"].value for r in names if (r["name"].lang or "").startswith("en")]
        me = english[0] if english else names[0]["name"].value if names else entity_id
        lpr = self.config.limit_per_relation
        lines: list[str] = []
        for rel in dict.fromkeys(relations):
            triples = []
            for row in self.store.select(naive_query("out_triples", entity_id=entity_id, relation=rel, limit=lpr * 2)):
                triples.append((me, rel, self._name(row, "tail")[0]))
            for row in self.store.select(naive_query("in_triples", entity_id=entity_id, relation=rel, limit=lpr * 4)):
                triples.append((self._name(row, "head")[0], rel, me))
            if len(triples) > lpr:
                triples = self.rng.sample(triples, lpr)
            lines += [f"[{h}, {r}, {t}]" for h, r, t in triples]
        return "\n".join(lines) if lines else "No triples found."


def naive_entity(naive: NaiveTools, topic: Topic, rels: list[str], out: dict) -> None:
    """Time one entity's naive calls into ``out`` (the same relations for get_triples as kgrag's)."""
    augmented = f"{topic.question} {topic.name}"
    seconds, (candidates, top) = timed(lambda: naive.get_relations(topic.entity_id, augmented))
    out["relations"].append(seconds)
    out["candidate_sets"].append(set(candidates))
    out["top"].append(top)
    seconds, _ = timed(lambda: naive.get_triples(topic.entity_id, rels[:2]))
    out["triples"].append(seconds)
    out["raw_sets"].append(set(naive.raw_relations(topic.entity_id)))  # untimed, for the agreement check


# ---------------------------------------------------------------------------------------------- driver
def measure(store: GraphStore, topics: list[Topic], config: KGToolsConfig,
            relation_filter: OfflineRelationFilter) -> tuple[dict, dict]:
    """Both paths on every entity, in alternating order (kgrag first on even entities, naive first on odd), after
    an untimed pass that warms the store over everything they will read; checks that they agree."""
    client = make_client(store, BUILTIN_SPECS["metaqa"], config)
    naive = NaiveTools(store, config, seed=config.seed)
    shown: list[list[str]] = []
    for topic in topics:  # warms the store's caches (not the sessions') and fixes get_triples' relations
        session = KGSession(client, question=topic.question, config=config, relation_filter=relation_filter)
        shown.append(relations_of(session.run(f'get_relations("{topic.entity_id}")')))
        session.run(triples_call(topic.entity_id, shown[-1][:2]))

    def fresh() -> tuple[dict, dict]:
        return ({"by_name": [], "by_id": [], "cached": [], "triples": [], "raw_sets": [], "candidate_sets": [],
                 "top": [], "triples_rel_counts": [], "name_mismatches": 0, "errors": 0},
                {"relations": [], "triples": [], "raw_sets": [], "candidate_sets": [], "top": []})

    for i, topic in enumerate(topics[:WARMUP]):  # every code path once before timing
        ours, base = fresh()
        kgrag_entity(client, topic, config, relation_filter, ours)
        naive_entity(naive, topic, shown[i], base)
    ours, base = fresh()
    for i, topic in enumerate(topics):
        if i % 2:
            naive_entity(naive, topic, shown[i], base)
        rels = kgrag_entity(client, topic, config, relation_filter, ours)
        assert rels == shown[i], f"get_relations changed between sessions for {topic.entity_id}"
        if not i % 2:
            naive_entity(naive, topic, shown[i], base)
    for topic, a, b in zip(topics, ours["raw_sets"], base["raw_sets"], strict=True):
        assert a == b, f"raw relation sets differ for {topic.entity_id}: {sorted(a ^ b)}"
    for topic, a, b in zip(topics, ours["candidate_sets"], base["candidate_sets"], strict=True):
        assert a == b, f"candidate relation sets differ for {topic.entity_id}: {sorted(a ^ b)}"
    assert ours["name_mismatches"] == 0, f"{ours['name_mismatches']} names resolved to another entity"
    assert ours["errors"] == 0, f"{ours['errors']} tool errors"
    return ours, base


def some_percentiles(seconds: list[float]) -> dict | None:
    return percentiles(seconds) if seconds else None


def summarise(ours: dict, naive: dict) -> tuple[dict, dict]:
    """Percentiles; ``get_triples`` over all entities (1 relation where only one was shown), and
    ``get_triples_2_relations`` over the entities asked for two."""
    two = [c == 2 for c in ours["triples_rel_counts"]]
    kg = {
        "get_relations_by_name": percentiles(ours["by_name"]),
        "get_relations_by_id": percentiles(ours["by_id"]),
        "get_relations_cached": percentiles(ours["cached"]),
        "get_triples": percentiles(ours["triples"]),
        "get_triples_2_relations": some_percentiles([t for t, c in zip(ours["triples"], two, strict=True) if c]),
    }
    nv = {
        "get_relations": percentiles(naive["relations"]),
        "get_triples": percentiles(naive["triples"]),
        "get_triples_2_relations": some_percentiles([t for t, c in zip(naive["triples"], two, strict=True) if c]),
    }
    return kg, nv


def ratio_of(a: dict | None, b: dict | None) -> float | None:
    return round(a["p50_ms"] / b["p50_ms"], 3) if a and b else None


def ratios(kg: dict, nv: dict) -> dict:
    """kgrag / naive p50 (the naive get_relations takes the id: no name resolution)."""
    return {
        "get_relations_by_id_vs_naive_p50": ratio_of(kg["get_relations_by_id"], nv["get_relations"]),
        "get_relations_by_name_vs_naive_p50": ratio_of(kg["get_relations_by_name"], nv["get_relations"]),
        "get_relations_cached_vs_naive_p50": ratio_of(kg["get_relations_cached"], nv["get_relations"]),
        "get_triples_2_relations_vs_naive_p50": ratio_of(kg["get_triples_2_relations"], nv["get_triples_2_relations"]),
        "get_triples_vs_naive_p50": ratio_of(kg["get_triples"], nv["get_triples"]),
    }


def target(figure: dict | None, limit: float, note: str) -> dict:
    value = figure["p50_ms"] if figure else None
    return {"target_ms": limit, "p50_ms": value, "pass": value is not None and value <= limit, "measured": note}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=1000, help="topic entities (embedded store)")
    parser.add_argument("--n-http", type=int, default=None, help="topic entities over HTTP (default: --n)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    ensure_prepared()
    out = get_settings().dataset_dir("metaqa")
    topics = load_topics(args.n, args.seed)
    n_http = min(args.n_http if args.n_http is not None else args.n, len(topics))
    config = KGToolsConfig(seed=args.seed)
    relation_filter = OfflineRelationFilter()  # one instance for all sessions (no state between calls)

    embedded = OxigraphStore(out / "oxigraph", read_only=True)
    emb_ours, emb_naive = measure(embedded, topics, config, relation_filter)

    served = serve_read_only(out / "oxigraph")  # the same directory, opened read-only by a second process
    try:
        remote = RemoteStore(served.url, timeout=30)
        http_ours, http_naive = measure(remote, topics[:n_http], config, relation_filter)
    finally:
        served.stop()

    emb_kg, emb_nv = summarise(emb_ours, emb_naive)
    http_kg, http_nv = summarise(http_ours, http_naive)
    top_agree = sum(set(a) == set(b) for a, b in zip(emb_ours["top"], emb_naive["top"], strict=True))
    figures = {
        "embedded": emb_kg,
        "http": http_kg,
        "targets": {
            "get_relations_p50_embedded": target(
                emb_kg["get_relations_by_name"], TARGETS_MS["get_relations_p50_embedded"],
                "cold session, entity by NAME (SPARQL name resolution included)"),
            "get_relations_by_id_p50_embedded": target(
                emb_kg["get_relations_by_id"], TARGETS_MS["get_relations_p50_embedded"], "cold session, entity by id"),
            "get_relations_cached_p50": target(
                emb_kg["get_relations_cached"], TARGETS_MS["get_relations_cached_p50"],
                "same session, same entity again, embedded"),
            "get_triples_p50_embedded": target(
                emb_kg["get_triples_2_relations"], TARGETS_MS["get_triples_p50_embedded"],
                "2 relations from get_relations, after it in the session"),
        },
        "n_embedded": len(topics),
        "n_http": n_http,
        "mean_relations_per_entity": round(sum(len(s) for s in emb_ours["candidate_sets"]) / len(topics), 2),
        "entities_with_one_relation": sum(c < 2 for c in emb_ours["triples_rel_counts"]),
        "relation_sets_agree": f"{len(topics)}/{len(topics)} embedded, {n_http}/{n_http} http (asserted)",
        "top_k_sets_agree_embedded": f"{top_agree}/{len(topics)}",
        "notes": [
            "kgrag and naive interleaved per entity (alternating which goes first), same store objects, store warmed first",
            "naive get_relations takes the id (no name resolution); compare it with get_relations_by_id",
            "get_triples: all entities (1 relation when only one was shown); get_triples_2_relations: those with 2",
            "naive queries write ns:type.object.name as a full IRI: pyoxigraph 0.5.13 rejects ns:a.b.c",
            "one OfflineRelationFilter shared by all sessions; MetaQA entities never exceed the filter threshold",
        ],
    }
    ratio = {"embedded": ratios(emb_kg, emb_nv), "http": ratios(http_kg, http_nv),
             "http_vs_embedded_get_relations_by_name_p50": ratio_of(http_kg["get_relations_by_name"],
                                                                    emb_kg["get_relations_by_name"])}
    write_result("kgtools", figures, baseline={"embedded": emb_nv, "http": http_nv}, ratio=ratio,
                 split="metaqa dev topic entities (seeded)", n=len(topics))


if __name__ == "__main__":
    main()

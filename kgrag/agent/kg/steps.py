"""The agent's steps on a triple graph behind SPARQL (the state's ``kg``): the same nodes as on a knowledge network
(:mod:`kgrag.agent.kn.steps`), each returning the state update with its ``trace`` entry.

    run = AgentRun(AgentSettings(kg="metaqa"), resources_for(get_settings()))
    state = {"question": "who directed the films starring Tom Hanks", "kg": "metaqa"}

- ``extract_keywords``: starts the turn (the thread's ``history`` and KG ``session_id`` kept); refuses an empty or
  too long question and an unknown or unprepared KG; keywords: the spans that name stored entities (the
  linker over the graph's names, :mod:`kgrag.hrag.online.linker`) and the question's other content words.
- ``schema_recall``: the KG's relations ranked for the question: the chain prior's relation chains (with the
  trained H-RAG retriever), else the topic's relations ranked by BM25 (the kg-tools session).
- ``contextual_recall``: the storage forms: the stored names (and ids) of the linked spans, not the user's
  spelling; the topic is the chosen one, or the thread's previous topic for a follow-up that names none.
- ``plan``: LLM-free, with query graphs on (``AgentSettings.query_graphs``, the default): ``query_graph``
  (:mod:`kgrag.agent.kg.query_plan`: the question's query graph — path, answer type, second topic, year / number
  filter, count, superlative — planned over the linked topic candidates and run as SPARQL) when the KG has no
  trained reasoner, or when the question counts, compares or asks a superlative (what a reasoner's relation path
  cannot say); the summary after it is the plan's ``describe()`` line. Otherwise (and with query graphs off, as
  before): ``reason_paths`` (H-RAG) then ``verify_path`` on the top answer's path (the store is asked for
  each triple); without a reasoner ``rank_chains`` (:mod:`kgrag.agent.kg.zero_shot`: the linked topics' one-hop
  and CVT two-hop chains ranked zero-shot, the best chain's ends, its triples checked). With an LLM:
  :mod:`kgrag.agent.kg.llm` (``<kg-query>`` text or tool calls); any LLM failure → the LLM-free plan, said.
- ``tools``: runs the pending calls in the thread's KG session (:mod:`kgrag.agent.kg.calls`).
- ``answer``: ranked answers + the paths (triples) that reach them (``evidence``, with ``verified``), the answer
  set, a sentence that names the path or chain used; the turn joins ``history``. After a query graph: the state's
  ``query_graph`` / ``query_graph_candidates`` / ``confidence`` / ``unused``, the evidence's ``hops`` (each hop's
  direction, read from the topic), a text naming the plan, each cue it could not use ("I could not apply 'before
  1900'"), how many answers' paths were checked on the store (only those), and below ``min_confidence`` no
  answer values: the text says why and names the best guess.
"""

from __future__ import annotations

import re
from typing import Any

from kgrag.agent.kg.calls import run_kg_call
from kgrag.agent.kg.llm import llm_plan, result_messages
from kgrag.agent.kg.needs import TripleRun
from kgrag.agent.kg.query_plan import Proposer
from kgrag.agent.kg.table_plans import check_on_tables, table_plan_step
from kgrag.agent.kg.triple_kg import EntityMatch, TripleKG, new_session_id
from kgrag.agent.turn.confidence import settle
from kgrag.agent.turn.messages import answer_message, question_from, question_update
from kgrag.agent.turn.node import (
    HISTORY_TURNS,
    Update,
    failure_answer,
    planned,
    question_problem,
    stop,
    traced,
)
from kgrag.agent.turn.row_plans import UNFILTERED_FLOOR, table_answer
from kgrag.agent.turn.state import AgentState, ToolCall, fresh_turn
from kgrag.data.registry import unknown_dataset
from kgrag.errors import KgragError
from kgrag.query_graph.cues import read_cues
from kgrag.query_graph.llm_proposal import propose_query_graph
from kgrag.query_graph.plan import QueryGraph
from kgrag.search.keywords import STOPWORDS

__all__ = ["answer", "contextual_recall", "extract_keywords", "plan", "schema_recall", "tools"]

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")


def _kg(state: AgentState, run: TripleRun) -> TripleKG:
    return run.resources.triple_kg(state["kg"])


def _turn(state: AgentState) -> str:
    """The key of this turn in the thread (a new turn starts a new question in the KG session)."""
    return f"{len(state.get('history') or [])}:{state.get('question', '')}"


def _topics(state: AgentState) -> list[EntityMatch]:
    topic = state.get("topic")
    return [EntityMatch(**{k: topic[k] for k in ("keyword", "name", "entity_id", "row", "match_type")})] if topic else []


@traced("extract_keywords")
def extract_keywords(state: AgentState, run: TripleRun) -> tuple[Update, str]:
    """Start the turn: validate the input, link the spans that name stored entities, keep the content words."""
    update: Update = fresh_turn()
    question = question_from(state)  # ``question``, else the conversation's last human message
    update["kg"] = kg_id = state.get("kg") or run.settings.kg or ""
    update["session_id"] = state.get("session_id") or new_session_id()
    update["planner"] = "llm" if run.settings.use_llm else "rules"
    problem = question_problem(question, run.settings)
    update.update(question_update(state, question, accepted=problem is None))
    if problem:
        return stop(update, problem)
    try:
        if not run.settings.may_read_kg(kg_id):  # a KG the caller's key may not read: as one not there
            raise KgragError(unknown_dataset(kg_id, []))
        kg = run.resources.triple_kg(kg_id)
    except KgragError as exc:
        message = str(exc)
        if run.settings.readable_kgs is not None and "unknown dataset" in message:  # list only the key's KGs
            message = unknown_dataset(kg_id, sorted(run.settings.readable_kgs))
        return stop(update, f"unknown or unprepared KG {kg_id!r}: {message}")
    links, linked = kg.link(question)
    spans = [(m.start(), m.end()) for m in re.finditer(re.escape(links[0].keyword), question)] if links else []
    words = [m.group() for m in _WORD.finditer(question)
             if m.group().lower() not in STOPWORDS and not any(s <= m.start() < e for s, e in spans)]
    update["keywords"] = ([{"text": li.keyword, "type": "entity", **li.as_dict()} for li in links]
                          + [{"text": w, "type": "word"} for w in dict.fromkeys(words)])
    update["context"] = {"linked": linked}
    named = ", ".join(f"{li.keyword!r}→{li.name}" for li in links) or "none"
    return update, f"entities: {named}; words: {', '.join(dict.fromkeys(words)) or 'none'}"


def _history_topic(state: AgentState) -> dict[str, Any] | None:
    for turn in reversed(state.get("history") or []):
        topic = turn.get("topic")
        if topic and "entity_id" in topic:
            return {**topic, "match_type": "history"}
    return None


@traced("schema_recall")
def schema_recall(state: AgentState, run: TripleRun) -> tuple[Update, str]:
    """The KG's relations ranked for the question: the chain prior's chains, else BM25 around the topic."""
    kg = _kg(state, run)
    linked = state.get("context", {}).get("linked") or state["question"]
    chains = kg.ranked_chains(linked)
    if chains:
        relations = list(dict.fromkeys(r for c in chains for r in c["relations"]))
        schema = {"chains": chains, "relations": relations, "ranker": "chain prior"}
        best = "; ".join(f"{c['chain']} {c['p']:.2f}" for c in chains)
        return {"schema": schema}, f"chains (chain prior): {best}"
    entity = next((k for k in state.get("keywords", []) if k["type"] == "entity"), None) or _history_topic(state)
    relations: list[str] = []
    if entity is not None:
        topic = EntityMatch(entity.get("keyword", entity["name"]), entity["name"], entity["entity_id"], entity["row"],
                          entity["match_type"])
        with kg.session(state["session_id"], _turn(state), state["question"], [topic]) as session:
            try:
                relations = session.candidate_relations(topic.entity_id, kg.config.kg_top_k)
            except KgragError as exc:
                return {"schema": {"chains": [], "relations": [], "ranker": "bm25"},
                        "errors": [f"schema recall failed: {exc}"]}, f"failed: {exc}"
    schema = {"chains": [], "relations": relations, "ranker": "bm25 around the topic"}
    return {"schema": schema}, f"relations (BM25 around the topic): {', '.join(relations[:5]) or 'none'}"


@traced("contextual_recall")
def contextual_recall(state: AgentState, run: TripleRun) -> tuple[Update, str]:
    """Storage forms: the stored names of the linked spans; the topic (or the thread's previous one)."""
    forms = [{k: v for k, v in kw.items() if k not in ("text", "type")}
             for kw in state.get("keywords", []) if kw["type"] == "entity"]
    topic = forms[0] if forms else _history_topic(state)
    context = {**state.get("context", {}), "storage_forms": forms}
    shown = ", ".join(f"{f['keyword']} → {f['name']} ({f['entity_id']}, {f['match_type']})" for f in forms[:3])
    if topic is not None and not forms:
        shown = f"none; the thread's topic {topic['name']} ({topic['entity_id']})"
    return {"context": context, "topic": topic}, f"{len(forms)} storage forms: {shown or 'none'}"


def _call(state: AgentState, name: str, args: dict[str, Any], why: str) -> ToolCall:
    return ToolCall(id=f"call_{len(state.get('tool_calls', [])) + 1}", name=name, args=args, why=why, label=name)


def _done(calls: list[ToolCall], name: str) -> list[ToolCall]:
    return [c for c in calls if c.get("name") == name and not c.get("error")]


def _structured(question: str) -> bool:
    """Whether the question asks what a reasoner's relation path cannot say: a count, a comparison, a superlative."""
    cues = read_cues(question)
    return cues.is_count or cues.comparison is not None or cues.superlative is not None


def _topic_links(state: AgentState, kg: TripleKG) -> list[dict[str, Any]]:
    """The topic candidates for the query graph: the chosen topic, then the other linked spans (and, where the KG
    offers scored candidates with a class flag, those)."""
    topic = state.get("topic") or {}
    links = [topic, *(k for k in state.get("keywords", []) if k["type"] == "entity")]
    candidates = getattr(kg, "candidates", None)
    if callable(candidates):
        try:
            found = candidates(state["question"], 4)
        except (KgragError, TypeError, ValueError):
            found = []
        for c in found or []:
            link = c if isinstance(c, dict) else {k: getattr(c, k, None) for k in (
                "entity_id", "name", "keyword", "match_type", "similarity", "score", "is_class")}
            links.append(link)
    keep = ("entity_id", "name", "keyword", "match_type", "similarity", "score", "is_class")
    return [{k: link[k] for k in keep if link.get(k) is not None} for link in links if link.get("entity_id")][:6]


def _over_a_type(question: str) -> bool:
    """Whether the question may range over a type with no named topic ("which scientists were born before 1880")."""
    cues = read_cues(question)
    return bool(cues.answer_words) and (cues.comparison is not None or cues.superlative is not None)


def _query_graph_call(state: AgentState, kg: TripleKG, topic: dict[str, Any] | None) -> tuple[Update, str]:
    start = f"from {topic['name']}" if topic else "over the asked type"
    call = _call(state, "query_graph", {"topics": _topic_links(state, kg)},
                 f"query graph: the question's structure planned {start} and run as SPARQL")
    return {"pending": [call]}, f"query_graph {start}" if not topic else f"query_graph from {topic['name']!r}"


def _plan_answers(table: tuple[Update, str, bool], topic: dict[str, Any] | None, question: str) -> bool:
    """Whether the plan over the KG's classes answers a question naming no typed entity: when sure; with no topic
    at all also when unsure (withheld) if it filters on something, or if it is at least UNFILTERED_FLOOR sure and no
    query graph over a type applies ("who is the best of them all?" stays unlinked)."""
    update, _, sure = table
    if sure:
        return True
    if topic is not None:
        return False
    filters = (update["table_plan"].get("plan") or {}).get("filters")
    return bool(filters) or (float(update["confidence"]) >= UNFILTERED_FLOOR and not _over_a_type(question))


def _rules_plan(state: AgentState, run: TripleRun) -> tuple[Update, str]:
    kg = _kg(state, run)
    calls = state.get("tool_calls", [])
    topic = state.get("topic")
    if state.get("table_plan"):
        return {"pending": [], "done": True}, "query plan executed"
    table = table_plan_step(state, run, kg)
    if table is not None and _plan_answers(table, topic, state["question"]):
        return table[0], table[1]
    if topic is None:
        if _done(calls, "query_graph") or not run.settings.query_graphs or not _over_a_type(state["question"]) \
                or any(c.get("name") == "query_graph" for c in calls):
            planned_graph = _done(calls, "query_graph")
            plan_json = planned_graph[-1]["result"].get("query_graph") if planned_graph else None
            if plan_json:
                return {"pending": [], "done": True}, f"plan: {QueryGraph.model_validate(plan_json).describe()}"
            return {"pending": [], "done": True}, "no topic entity linked: nothing to ask"
        return _query_graph_call(state, kg, None)
    planned_graph = _done(calls, "query_graph")
    if planned_graph:
        plan_json = planned_graph[-1]["result"].get("query_graph")
        line = QueryGraph.model_validate(plan_json).describe() if plan_json else planned_graph[-1]["result"].get(
            "text", "no query graph")
        update: Update = {"pending": [], "done": True}
        if plan_json:  # the executed plan joins the state here: the console shows it as a step of its own
            result = planned_graph[-1]["result"]
            update.update({"query_graph": plan_json, "query_graph_candidates": result.get("candidates", []),
                           "confidence": QueryGraph.model_validate(plan_json).confidence,
                           "unused": list(plan_json.get("unused") or [])})
        return update, f"plan: {line}"
    wants_graph = run.settings.query_graphs and not any(c.get("name") == "query_graph" for c in calls)
    if wants_graph and (kg.reasoner is None or _structured(state["question"])):
        return _query_graph_call(state, kg, topic)
    if kg.reasoner is not None:
        reasoned = _done(calls, "reason_paths")
        if not any(c.get("name") == "reason_paths" for c in calls):
            linked = state.get("context", {}).get("linked") or state["question"]
            call = _call(state, "reason_paths", {"question": linked}, f"H-RAG paths from {topic['name']}")
            return {"pending": [call]}, f"reason_paths from {topic['name']!r}"
        answers = reasoned[-1]["result"].get("answers", []) if reasoned else []
        id_paths = answers[0].get("id_triples") if answers else None
        if id_paths and not any(c.get("name") == "verify_path" for c in calls):
            call = _call(state, "verify_path", {"triples": id_paths[0]}, f"check the path to {answers[0]['name']}")
            return {"pending": [call]}, f"verify_path: {len(id_paths[0])} triples to {answers[0]['name']!r}"
        return {"pending": [], "done": True}, "answered: no further call"
    if not any(c.get("name") == "rank_chains" for c in calls):
        entities = list(dict.fromkeys([topic["entity_id"], *(
            k["entity_id"] for k in state.get("keywords", [])
            if k["type"] == "entity" and k.get("match_type") in ("bracket", "exact"))]))[:3]
        call = _call(state, "rank_chains", {"entities": entities},
                     f"zero-shot: the relation chains of {topic['name']} ranked for the question")
        return {"pending": [call]}, f"rank_chains from {len(entities)} topic(s): {topic['name']!r}"
    return {"pending": [], "done": True}, "answered: no further call"


@traced("plan")
def plan(state: AgentState, run: TripleRun) -> tuple[Update, str]:
    """The next call, or none (then ``answer``)."""
    if len(state.get("tool_calls", [])) >= run.settings.max_tool_calls:
        note = f"tool-call budget ({run.settings.max_tool_calls}) spent"
        errors = [note] if state.get("planner") == "llm" else []
        return {"pending": [], "done": True, "errors": errors}, note
    if state.get("planner") == "llm" and run.settings.query_graphs and _structured(state["question"]):
        # a count, comparison or superlative: the LLM proposes the query graph inside the query_graph tool
        # (kgrag.agent.kg.query_plan), the same executor runs it, the LLM-free plan is the fallback
        return _rules_plan(state, run)
    return planned(state, run, llm_plan, _rules_plan)


def _proposer(state: AgentState, run: TripleRun) -> Proposer | None:
    """The LLM's query graph for the ``query_graph`` tool, when this turn plans with an LLM."""
    if state.get("planner") != "llm" or not run.settings.query_graphs:
        return None
    client = run.resources.llm()
    if client is None:
        return None
    return lambda question, topics, relations: propose_query_graph(client, question, topics, relations)


@traced("tools")
def tools(state: AgentState, run: TripleRun) -> tuple[Update, str]:
    """Run the pending calls in the thread's KG session (at most what the budget leaves)."""
    kg = _kg(state, run)
    calls = list(state.get("tool_calls", []))
    pending = state.get("pending", [])
    room = max(0, run.settings.max_tool_calls - len(calls))
    topics = _topics(state)
    with kg.session(state["session_id"], _turn(state), state["question"], topics,
                    max_calls=run.settings.max_tool_calls) as session:
        propose = _proposer(state, run)
        done = [run_kg_call(kg, session, c, state["question"], topics, propose=propose) for c in pending[:room]]
    over = [ToolCall(**c, result={"text": "[the tool-call budget of this run is spent]"},
                     error="the tool-call budget of this run is spent") for c in pending[room:]]
    update: Update = {"tool_calls": calls + done + over, "pending": []}
    if state.get("planner") == "llm":
        update["llm_messages"] = [*state.get("llm_messages", []), *result_messages(done + over, run.settings.llm_style)]
    summary = "; ".join(f"{c['name']}: " + (f"error {c['error']}" if c.get("error") else
                                            (c.get("result") or {}).get("text", "").split("\n")[0][:120])
                        for c in done + over)
    return update, summary or "nothing to run"


def _reasoned(state: AgentState) -> tuple[list[dict[str, Any]], list[str], dict[str, Any] | None]:
    """The last ``reason_paths`` result: (ranked answers, the answer set, the verify result of its top path)."""
    reasoned = _done(state.get("tool_calls", []), "reason_paths")
    if not reasoned:
        return [], [], None
    result = reasoned[-1]["result"]
    verified = _done(state.get("tool_calls", []), "verify_path")
    return result.get("answers", []), list(result.get("predicted", [])), (verified[-1]["result"] if verified else None)


def _zero_shot(state: AgentState) -> dict[str, Any] | None:
    """The last ``rank_chains`` result (the zero-shot plan), if any."""
    ranked = _done(state.get("tool_calls", []), "rank_chains")
    return ranked[-1]["result"] if ranked else None


def _zero_shot_evidence(result: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"answer": e["answer"], "entity_id": e["entity_id"], "score": result["score"], "path": result["chain"],
             "triples": e["triples"], "id_triples": e["id_triples"],
             "verified": all(e["held"]) if e["held"] else None} for e in result.get("evidence", [])]


def _tails(state: AgentState) -> list[str]:
    """The other ends of the triples ``get_triples`` returned for the topic (the no-reasoner plan's answers)."""
    topic_id = (state.get("topic") or {}).get("entity_id")
    values = [t["tail"] if t["head_id"] == topic_id else t["head"]
              for call in _done(state.get("tool_calls", []), "get_triples") for t in call["result"].get("triples", [])]
    return list(dict.fromkeys(values))


def _query_graph(state: AgentState) -> dict[str, Any] | None:
    """The last ``query_graph`` result, if any."""
    planned = _done(state.get("tool_calls", []), "query_graph")
    return planned[-1]["result"] if planned else None


def _checked_text(checked: int, total: int) -> str:
    """What was checked on the store, said only of what was checked."""
    if not checked:
        return ""
    if checked == total:
        return f" Each answer's path was checked on the store ({checked} of {total})."
    return f" {checked} of {total} answers' paths checked on the store."


def _query_graph_answer(result: dict[str, Any], run: TripleRun) -> tuple[list[str], str, list[dict[str, Any]],
                                                                         list[dict[str, Any]], Update]:
    """(values, text, ranked, evidence, the state's plan fields) of an executed query graph (issue 44 §4): the
    text names the plan, what it could not apply, what was checked (the answer node's ``settle`` adds the unused
    cues and abstains below ``min_confidence``)."""
    plan = QueryGraph.model_validate(result["query_graph"])
    unused = list(plan.unused)
    fields: Update = {"query_graph": result["query_graph"], "query_graph_candidates": result.get("candidates", []),
                      "confidence": plan.confidence, "unused": unused}
    names = list(dict.fromkeys(a["name"] for a in result.get("answers", [])))
    ranked = [{"name": a["name"], "entity_id": a["entity_id"], "score": round(plan.score, 4)}
              for a in result.get("answers", [])]
    evidence = [{"answer": e["answer"], "entity_id": e["entity_id"], "score": round(plan.score, 4),
                 "path": plan.describe(), "triples": e["triples"], "id_triples": e["id_triples"], "hops": e["hops"],
                 "verified": all(e["held"]) if e["held"] else None} for e in result.get("evidence", [])]
    # the unused cues and the abstention below min_confidence: kgrag.agent.turn.confidence.settle (as on a network)
    caveats = "".join(f" Not applied: {note}." for note in result.get("not_applied", []))
    shown = ", ".join(names[: run.settings.max_listed])
    more = f" (and {len(names) - run.settings.max_listed} more)" if len(names) > run.settings.max_listed else ""
    counted = ""
    if result.get("count") is not None:
        counted = f" Counted: {', '.join(i['name'] for i in result.get('items', [])[:10])}" + (
            " …" if len(result.get("items", [])) > 10 else "") + "."
    lead = f"{shown}{more}." if names else "No answer matches the plan."
    text = (f"{lead}{counted} Plan: {plan.describe()} (the planner's own score {plan.confidence:.2f}).{caveats}"
            + _checked_text(int(result.get("checked", 0)), int(result.get("total", 0))))
    return names, text, ranked, evidence, fields


_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)


def parse_answer(text: str) -> list[str]:
    """The names of a model's ``<answer>a | b</answer>`` (the whole text when it has no tag)."""
    match = _ANSWER.search(text)
    body = match.group(1) if match else text
    return list(dict.fromkeys(p.strip() for p in re.split(r"\s*\|\s*|\n", body) if p.strip()))


@traced("answer")
def answer(state: AgentState, run: TripleRun) -> tuple[Update, str]:
    """Ranked answers with their paths, the answer set and a sentence; the turn joins the thread's history."""
    ranked, predicted, verified = _reasoned(state)
    zero_shot = _zero_shot(state)
    planned = _query_graph(state)
    plan_fields: Update = {}
    evidence = [{"answer": a["name"], "entity_id": a["entity_id"], "score": a["score"], "path": p,
                 "triples": t, "verified": (verified or {}).get("verified") if i == 0 and j == 0 else None}
                for i, a in enumerate(ranked[:5]) for j, (p, t) in enumerate(zip(a["paths"][:1], a["triples"][:1],
                                                                                 strict=True))]
    topic = state.get("topic")
    llm_text = state.get("answer", "") if state.get("planner") == "llm" else ""
    calibrated: float | None = None
    if state.get("errors") and not state.get("schema"):  # refused at the input, before schema recall
        values, text = [], failure_answer(state["errors"])
    elif state.get("table_plan"):
        text, values, plan_evidence, calibrated = table_answer(state)
        evidence, ranked = plan_evidence, []
        plan_fields = {"confidence": float(state.get("confidence") or 0.0), "unused": list(state.get("unused") or [])}
    elif llm_text:
        values, text = parse_answer(llm_text), llm_text
    elif topic is None and (planned is None or planned.get("query_graph") is None):
        values, text = [], (f"I could not link the question to an entity of the KG {state.get('kg')!r}; name one "
                            "as it is stored, or put it in [brackets].")
    elif planned is not None and planned.get("query_graph") is None:
        values, text = [], f"I could not build a query for this question: {planned.get('reason') or 'no plan'}."
    elif planned is not None:
        values, text, ranked, evidence, plan_fields = _query_graph_answer(planned, run)
    elif ranked or predicted:
        values = predicted or [ranked[0]["name"]]
        shown = ", ".join(values[: run.settings.max_listed])
        more = f" (and {len(values) - run.settings.max_listed} more)" if len(values) > run.settings.max_listed else ""
        text = f"{shown}{more}."
        if evidence:
            check = {True: " (each triple checked on the store)", False: " (NOT all held by the store)"}.get(
                evidence[0]["verified"], "")
            text += f" Path: {evidence[0]['path']}{check}."
    elif zero_shot is not None and zero_shot.get("answers"):
        ranked = [{"name": a["name"], "entity_id": a["entity_id"], "score": a["score"]} for a in zero_shot["answers"]]
        values = list(dict.fromkeys(a["name"] for a in ranked))
        evidence = _zero_shot_evidence(zero_shot)
        shown = ", ".join(values[: run.settings.max_listed])
        more = f" (and {len(values) - run.settings.max_listed} more)" if len(values) > run.settings.max_listed else ""
        check = {True: "each triple checked on the store", False: "NOT all held by the store"}.get(
            zero_shot.get("verified"), "unchecked")
        text = f"{shown}{more}. Chain (zero-shot, score {zero_shot['score']:.2f}): {zero_shot['chain']} ({check})."
        if zero_shot.get("note"):
            text += f" Note: {zero_shot['note']}."
    else:
        values = _tails(state)
        text = (", ".join(values[: run.settings.max_listed]) + "." if values else
                f"No answer found from {topic['name']!r} in the KG {state.get('kg')!r}"
                + (f" ({state['errors'][-1]})." if state.get("errors") else "."))
    turn = {"question": state.get("question", ""), "topic": topic, "answer": text}
    history = [*(state.get("history") or []), turn][-HISTORY_TURNS:]
    update = {"answer": text, "answers": values, "ranked": [{k: a[k] for k in ("name", "entity_id", "score")}
                                                            for a in ranked],
              "evidence": evidence, "history": history, "done": True, "messages": [answer_message(text)],
              **plan_fields}
    if plan_fields:  # a query graph's / plan's answer: its unused cues said, withheld below min_confidence
        if calibrated is None:
            update["cross_check"] = check_on_tables(state, run, _kg(state, run), list(values))
        update = settle(update, run.settings, calibrated, "query_graph", state.get("question", ""))
    return update, f"{len(update['answers'])} answers; {len(evidence)} paths"

"""The agent's steps, one function per graph node (``graphs/agent/graph.py`` only wires them): each takes the
state and an :class:`~kgrag.agent.turn.node.AgentRun` (:data:`~kgrag.agent.kn.needs.NetworkRun`) and returns the state update, including its entry of ``trace``.

    run = AgentRun(AgentSettings(kn_id="medical"), resources_for(get_settings()))
    state = {"question": "百日咳有哪些症状"}
    for step in (extract_keywords, schema_recall, contextual_recall, plan, tools, plan, answer): ...

- ``extract_keywords``: starts a turn (per-turn fields reset, the thread's ``history`` kept); checks the input — an
  empty or too long question, an unknown network: ``errors`` says so and ``done`` ends the turn at ``answer``;
  keywords by contextual recall's extractor (the LLM's when the run uses one, rules as its fallback), plus the
  stored instance names the question says verbatim (``stored_name`` keywords; one dictionary scan per turn).
- ``schema_recall``: the ranked schema intents over the candidates that start at the topic's types
  (:mod:`kgrag.agent.kn.intent_sources`) and the object / relation types they recall; with the LLM planner also
  kn_search's concept recall.
- ``contextual_recall``: the storage forms of the topic candidates (:mod:`kgrag.agent.kn.linking`).
- ``plan``: the next tool call — by the LLM (:mod:`kgrag.agent.kn.llm_planner`) when the run uses one, else (or when
  the LLM fails, said in ``errors`` and the trace) by the LLM-free planner: with ``AgentSettings.query_graphs`` and a
  question with structure (a count, a comparison, a superlative, two topics, an answer type the best relation does
  not reach: :func:`kgrag.query_graph.network_planner.has_structure`) a query graph
  (:mod:`kgrag.query_graph.network_planner`) whose stages :mod:`kgrag.query_graph.network_executor` turns into
  calls, one stage per plan/tools round (its ``describe()`` line in the trace); else the best untried intent.
  ``query_graph`` holds the executed plan, ``query_graph_candidates`` the next ones, ``unused`` what of the question
  it left out; ``confidence`` is the plan's (coverage × how clearly it beat the others), or — for a one-relation
  answer — the probability schema recall gave the intent that answered (1.0 for an intent planned because it is the
  only one starting at the linked topic's type).
- ``tools``: runs the pending calls (:mod:`kgrag.agent.kn.tools`); ``plan`` comes next.
- ``answer``: values + evidence (the instances they came from, each link in the direction it was walked) + a
  sentence ("Emma — written by: Jane Austen"; a count says the number, the counted items follow); what the plan did
  not use is said, and below ``AgentSettings.min_confidence`` the answer is withheld
  (:func:`kgrag.agent.turn.confidence.settle`); the turn joins ``history``.
"""

from __future__ import annotations

from typing import Any

from kgrag.agent.kn import answers as ans
from kgrag.agent.kn.linking import (
    InstanceMatch,
    contains_candidates,
    exact_matches,
    storage_form_candidates,
)
from kgrag.agent.kn.llm_planner import llm_plan, tool_messages
from kgrag.agent.kn.needs import NetworkRun
from kgrag.agent.kn.planner import label_types, next_call, parse_label, path_steps, topic_type
from kgrag.agent.kn.table_plans import check_on_rows, names_an_instance, table_plan_step
from kgrag.agent.kn.tools import run_tool
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
from kgrag.errors import NetworkNotFound
from kgrag.query_graph.llm_proposal import propose_query_graph
from kgrag.query_graph.network_executor import next_calls as graph_calls
from kgrag.query_graph.network_executor import read_execution
from kgrag.query_graph.network_planner import NetworkTopic, has_structure, plan_network, unapplicable_cues
from kgrag.query_graph.plan import QueryGraph, Topic
from kgrag.search.contextual import extract
from kgrag.search.kn_models import KnSearchRequest
from kgrag.search.pipeline import kn_search

__all__ = ["answer", "contextual_recall", "extract_keywords", "plan", "schema_recall", "tools"]

#: the keyword type of a stored instance name said verbatim in the question
STORED_NAME = "stored_name"


@traced("extract_keywords")
def extract_keywords(state: AgentState, run: NetworkRun) -> tuple[Update, str]:
    """Start the turn: validate the input, then the question's keywords."""
    update: Update = fresh_turn()
    question = question_from(state)  # ``question``, else the conversation's last human message
    kn_id = state.get("kn_id") or run.settings.kn_id
    update["kn_id"] = kn_id
    update["planner"] = "llm" if run.settings.use_llm else "rules"
    problem = question_problem(question, run.settings)
    update.update(question_update(state, question, accepted=problem is None))
    if problem:
        return stop(update, problem)
    try:
        if not run.settings.may_read_kn(kn_id):  # a network the caller's key may not read: as one not there
            raise NetworkNotFound(kn_id)
        lexicon = run.resources.lexicon(kn_id)
    except NetworkNotFound:
        return stop(update, f"unknown knowledge network {kn_id!r}")
    extraction, llm_error = extract(question, lexicon, use_llm=run.settings.use_llm)
    if llm_error:
        update["errors"].append(llm_error)
    keywords = (
        [{"text": e.text, "type": "entity", "in_dictionary": e.in_dictionary} for e in extraction.entities]
        + [{"text": r.text, "type": "relation", "relation_types": r.relation_type_ids}
           for r in extraction.relation_words]
        + [{"text": a.text, "type": "attribute"} for a in extraction.attribute_values])
    words = ", ".join(k["text"] for k in keywords) or "none"
    # the dictionary match: stored names said verbatim (the ranker's mask, contextual recall's exact forms)
    names = [{"text": c.keyword, "type": STORED_NAME, "name": c.name, "object_type": c.object_type,
              "instance_id": c.instance_id, "start": c.start} for c in exact_matches(question, lexicon)]
    update["keywords"] = keywords + names
    said = ", ".join(dict.fromkeys(n["text"] for n in names)) or "none"
    return update, f"{len(keywords)} keywords ({extraction.source}): {words}; stored names: {said}"


def _exact_forms(state: AgentState) -> list[InstanceMatch]:
    """The stored names the question says verbatim (found by ``extract_keywords``), as exact storage forms."""
    return [InstanceMatch(k.get("name", k["text"]), k["object_type"], k["instance_id"], "exact", k["text"], k["start"])
            for k in state.get("keywords", []) if k["type"] == STORED_NAME]


@traced("schema_recall")
def schema_recall(state: AgentState, run: NetworkRun) -> tuple[Update, str]:
    """The ranked schema intents (topic words masked) over the candidates that start at the topic's types, and the
    schema they recall; with the LLM planner also kn_search's concept recall (the LLM-free plan needs none: on
    a 6,000-relation network it costs ~0.5 s)."""
    kn_id = state["kn_id"]
    question = state["question"]
    names = _exact_forms(state)
    planner = run.resources.intent_planner(kn_id)
    # the candidates start at the types of the stored names the question says, else at the thread's topic's type
    # (a follow-up), else anywhere
    history = _history_topic(state)
    topic_types = list(dict.fromkeys(n.object_type for n in names)) or ([history.object_type] if history else [])
    intents = planner.rank(question, names[0].keyword if names else None, topic_types)
    network = run.resources.network(kn_id)
    recalled = [label_types(network, label) for label, _ in intents]
    object_types = list(dict.fromkeys([*topic_types, *(t for pair in recalled for t in pair if t)]))
    relation_types = list(dict.fromkeys(rid for label, _ in intents if not label.startswith("prop:")
                                        for _kind, rid in path_steps(label)))
    recall = "intent candidates"
    if state.get("planner") == "llm":
        concepts = kn_search(KnSearchRequest(query=question, kn_id=kn_id, only_schema=True), run.resources.store,
                             reranker=None)
        object_types = list(dict.fromkeys([*(o.concept_id for o in concepts.object_types), *object_types]))
        relation_types = list(dict.fromkeys([*(r.concept_id for r in concepts.relation_types), *relation_types]))
        recall = "kn_search"
    schema = {"object_types": object_types, "relation_types": relation_types, "recall": recall,
              "intents": [[label, round(p, 4)] for label, p in intents], "ranker": planner.source}
    if planner.note:
        schema["note"] = planner.note
    best = ", ".join(f"{label} {p:.2f}" for label, p in intents[:3]) or "none"
    said = f" ({planner.note})" if planner.note else ""
    return {"schema": schema}, f"types {object_types[:4]}; intents ({planner.source}{said}): {best}"


def _history_topic(state: AgentState) -> InstanceMatch | None:
    for turn in reversed(state.get("history") or []):
        topic = turn.get("topic")
        if topic and "object_type" in topic:  # a network's topic (a thread may have asked a triple graph before)
            return InstanceMatch(**{**topic, "match_type": "history"})
    return None


@traced("contextual_recall")
def contextual_recall(state: AgentState, run: NetworkRun) -> tuple[Update, str]:
    """The topic candidates' storage forms: the stored names the question says (exact), else contains/fuzzy
    forms for the object type the best intent needs."""
    kn_id, question = state["kn_id"], state["question"]
    network = run.resources.network(kn_id)
    candidates = _exact_forms(state)
    intents = state["schema"].get("intents", [])
    best = topic_type(network, intents[0][0]) if intents else None
    keywords = [k["text"] for k in state.get("keywords", []) if k["type"] == "entity"]
    if best is not None and _history_topic(state) is None and not any(c.object_type == best for c in candidates):
        candidates += contains_candidates(question, run.resources.lexicon(kn_id), best)
        if keywords and not any(c.object_type == best for c in candidates):
            types = [ot for ot in network.object_types if ot.id == best]
            candidates += storage_form_candidates(run.resources.store, kn_id, keywords[:3], types)
    context = {"storage_forms": [c.as_dict() for c in candidates[:20]]}
    forms = ", ".join(f"{c.name} ({c.object_type}, {c.match_type})" for c in candidates[:5]) or "none"
    return {"context": context}, f"{len(candidates)} storage forms: {forms}"


def _graph_calls(state: AgentState, calls: list[dict[str, Any]]) -> list[ToolCall]:
    start = len(state.get("tool_calls", []))
    return [ToolCall(id=f"call_{start + n + 1}", **c) for n, c in enumerate(calls)]


def _linked(state: AgentState) -> list[NetworkTopic]:
    """The topics a query graph may start from: the storage forms the question names (exact or alias)."""
    return [NetworkTopic(c["name"], c["object_type"], c["instance_id"], c.get("keyword", ""), c.get("start", -1))
            for c in state.get("context", {}).get("storage_forms", []) if c.get("match_type") in ("exact", "alias")]


def _query_graph_plan(state: AgentState, run: NetworkRun) -> tuple[Update, str] | None:
    """The query graph's next stage of calls, or None when the turn does not plan one (then today's planner)."""
    kn_id = state["kn_id"]
    network = run.resources.network(kn_id)
    done = [c for c in state.get("tool_calls", []) if str(c.get("label", "")).startswith("qg:")]
    if state.get("query_graph"):
        plan = QueryGraph.model_validate(state["query_graph"])
        calls = graph_calls(plan, network, kn_id, done)
        if not calls:
            return {"pending": [], "done": True}, f"query graph executed: {plan.describe()}"
        return {"pending": _graph_calls(state, calls)}, f"query graph, next: {', '.join(c['label'] for c in calls)}"
    if state.get("tool_calls"):
        return None  # today's planner is already at work this turn
    forms = [InstanceMatch(**c) for c in state.get("context", {}).get("storage_forms", [])]
    linked = _linked(state)
    intents = [(label, p) for label, p in state.get("schema", {}).get("intents", [])]
    question = state["question"]
    if not has_structure(question, network, linked, intents[0][0] if intents else None):
        return None
    plans = plan_network(question, network, linked, intents)
    if not plans:
        return None
    best = plans[0]
    calls = graph_calls(best, network, kn_id, [])
    update: Update = {"query_graph": best.model_dump(mode="json"),
                      "query_graph_candidates": [p.model_dump(mode="json") for p in plans[1:]],
                      "confidence": best.confidence, "unused": list(best.unused),
                      "pending": _graph_calls(state, calls)}
    if best.topics:
        first = best.topics[0]
        update["topic"] = next((c.as_dict() for c in forms if f"{c.object_type}:{c.instance_id}" == first.id),
                               None)
    if not calls:
        update["done"] = True
    return update, f"query graph: {best.describe()} (confidence {best.confidence:.2f}, {len(plans)} candidates)"


def _llm_query_graph(state: AgentState, run: NetworkRun) -> tuple[Update, str] | None:
    """With an LLM, a question with structure: the LLM's query graph (checked against the network's relation
    types and properties, :mod:`kgrag.query_graph.llm_proposal`) run by the same executor; when it proposes none
    that holds, the LLM-free query graph, said in ``errors``; None when the turn plans no query graph."""
    if state.get("tool_calls") or state.get("query_graph"):
        return None
    network = run.resources.network(state["kn_id"])
    linked = _linked(state)
    intents = [(label, p) for label, p in state.get("schema", {}).get("intents", [])]
    if not has_structure(state["question"], network, linked, intents[0][0] if intents else None):
        return None
    client = run.resources.llm()
    if client is None:
        return None
    relations = {rt.id: rt.name or rt.id for rt in network.relation_types}
    for ot in network.object_types:
        for prop in ot.data_properties:
            relations.setdefault(prop.name, prop.display_name or prop.name)
    topics = [Topic(name=t.name[:500], id=f"{t.object_type}:{t.instance_id}"[:500], mention=t.mention[:500],
                    type=t.object_type[:300]) for t in linked]
    proposed, why = propose_query_graph(client, state["question"], topics, relations)
    rules = _query_graph_plan(state, run)
    if proposed is None:
        if rules is None:
            return None
        update, summary = rules
        return {**update, "errors": [f"LLM query graph not used ({why}); the LLM-free plan was used"]}, \
            f"LLM query graph not used ({why}) -> {summary}"
    kn_id = state["kn_id"]
    calls = graph_calls(proposed, network, kn_id, [])
    others = [rules[0]["query_graph"]] if rules is not None and rules[0].get("query_graph") else []
    confidence = rules[0].get("confidence", 0.5) if rules is not None and others and \
        QueryGraph.model_validate(others[0]).describe() == proposed.describe() else 0.5
    plan_json = proposed.model_copy(update={"confidence": confidence}).model_dump(mode="json")
    update: Update = {"query_graph": plan_json, "query_graph_candidates": others, "confidence": confidence,
                      "unused": [], "pending": _graph_calls(state, calls)}
    if not calls:
        update["done"] = True
    return update, f"query graph (LLM): {proposed.describe()}"


def _conditions(graph: dict[str, Any] | None) -> int:
    """How many conditions of the question a query graph applies: its topics and literal constraint."""
    if not graph:
        return 0
    return len(graph.get("topics") or []) + (graph.get("literal_constraint") is not None)


def _rules_plan(state: AgentState, run: NetworkRun) -> tuple[Update, str]:
    kn_id = state["kn_id"]
    unused: list[str] = []
    if state.get("table_plan"):
        return {"pending": [], "done": True}, "query plan executed"
    # a question that names no stored instance: the plan over rows when sure, else the query graphs, else the
    # unsure plan (withheld); a named instance keeps the topic's planners (its thread, its relation's reading)
    named = names_an_instance(state) or _history_topic(state) is not None
    table = table_plan_step(state, run) if not named else None
    if table is not None and table[2]:
        return table[0], table[1]
    graph = _query_graph_plan(state, run) if run.settings.query_graphs else None
    if table is not None and (_conditions(graph[0].get("query_graph") if graph else None) <
                              len((table[0]["table_plan"].get("plan") or {}).get("filters") or ())
                              or (graph is None and float(table[0]["confidence"]) >= UNFILTERED_FLOOR)):
        return table[0], table[1]  # the unsure plan over rows applies conditions the query graph leaves out
    if graph is not None:
        return graph
    if run.settings.query_graphs and not state.get("tool_calls"):
        # a cue no property can take is said in the one-relation answer
        unused = unapplicable_cues(state["question"], run.resources.network(kn_id), _linked(state))
    if any(c.get("result") and ans.evidence_from(c) for c in state.get("tool_calls", [])):
        return {"pending": [], "done": True}, "answered: no further call"
    network = run.resources.network(kn_id)
    candidates = [InstanceMatch(**c) for c in state.get("context", {}).get("storage_forms", [])]
    intents = [(label, p) for label, p in state.get("schema", {}).get("intents", [])]
    tried = {c.get("label", "") for c in state.get("tool_calls", [])}
    found = next_call(intents, candidates, network, kn_id, tried, prior=run.resources.topic_prior(kn_id),
                      history_topic=_history_topic(state))
    if found is None:
        if not any(c.get("name") == "query_modes" for c in state.get("tool_calls", [])):
            # nothing structured to ask: the network's texts may still hold the answer
            call = ToolCall(id=f"call_{len(state.get('tool_calls', [])) + 1}", name="query_modes",
                            args={"query": state["question"], "mode": "mix"}, why="no linked topic: text retrieval",
                            label="query_modes")
            return {"pending": [call]}, "query_modes (mix): no untried intent has a linked topic"
        return {"pending": [], "done": True}, "no further call: no untried intent has a linked topic"
    call, label, topic = found
    call["id"] = f"call_{len(state.get('tool_calls', [])) + 1}"
    call["label"] = label
    confidence = dict(intents).get(label, 0.0) if len(intents) > 1 else 1.0
    update: Update = {"pending": [call], "topic": topic.as_dict(), "confidence": round(float(confidence), 4)}
    if unused:
        update["unused"] = unused
    return update, f"{call['name']} for {call['why']}"


@traced("plan")
def plan(state: AgentState, run: NetworkRun) -> tuple[Update, str]:
    """The next tool call(s), or none (then ``answer``)."""
    if len(state.get("tool_calls", [])) >= run.settings.max_tool_calls:
        return {"pending": [], "done": True}, f"tool-call budget ({run.settings.max_tool_calls}) spent"
    if state.get("planner") == "llm" and run.settings.query_graphs:
        if state.get("query_graph"):  # the LLM's (or the fallback's) query graph: its next stage
            return _query_graph_plan(state, run) or ({"pending": [], "done": True}, "query graph executed")
        proposed = _llm_query_graph(state, run)
        if proposed is not None:
            return proposed
    return planned(state, run, llm_plan, _rules_plan)


@traced("tools")
def tools(state: AgentState, run: NetworkRun) -> tuple[Update, str]:
    """Run the pending calls (at most what the budget leaves)."""
    calls = list(state.get("tool_calls", []))
    pending = state.get("pending", [])
    room = max(0, run.settings.max_tool_calls - len(calls))
    done: list[ToolCall] = [run_tool(run.resources.store, c, state["kn_id"]) for c in pending[:room]]
    over: list[ToolCall] = [ToolCall(**c, result=None, error="the tool-call budget of this run is spent")
                            for c in pending[room:]]
    update: Update = {"tool_calls": calls + done, "pending": []}
    if state.get("planner") == "llm":
        update["llm_messages"] = [*state.get("llm_messages", []), *tool_messages(done + over)]
    summary = "; ".join(f"{c['name']}: " + (f"error {c['error']}" if c.get("error") else
                                            (c.get("result") or {}).get("summary")
                                            or f"{len(ans.evidence_from(c))} values") for c in done)
    return update, summary or "nothing to run"


@traced("answer")
def answer(state: AgentState, run: NetworkRun) -> tuple[Update, str]:
    """Values, evidence and the answer sentence; the turn joins the thread's history."""
    evidence: list[dict[str, Any]] = []
    via = ""
    network = _network_of(state, run)
    keys = ans.display_keys(network) if network is not None else None
    for call in state.get("tool_calls", []):
        rows = ans.evidence_from(call, keys)
        if rows:
            evidence, via = rows, rows[0]["via"]
            if state.get("planner") != "llm":
                break  # the rules planner stops at its first call with values
    values = ans.answer_values(evidence)
    topic = state.get("topic")
    graph = QueryGraph.model_validate(state["query_graph"]) if state.get("query_graph") else None
    calibrated: float | None = None
    if state.get("table_plan"):
        text, values, evidence, calibrated = table_answer(state)
    elif graph is not None and network is not None:
        execution = read_execution(graph, network, state.get("tool_calls", []))
        evidence, values = execution.evidence, execution.answers
        text = _graph_answer(graph, network, execution, run.settings.max_listed)
    elif state.get("errors") and not state.get("schema"):  # refused at the input, before schema recall
        text = failure_answer(state["errors"])
    elif state.get("planner") == "llm" and state.get("answer"):
        cited = sorted({r["instance"] for r in evidence} | {r["value_instance"] for r in evidence
                                                            if r["value_instance"]})
        text = state["answer"] + (f"\n[instances used: {', '.join(cited[:20])}]" if cited else "")
    elif topic is None and not evidence:
        text = (f"I could not link the question to an instance of the knowledge network {state.get('kn_id')!r}"
                + _what_to_name(state, run, network) + ".")
        passages = ans.passages_from(state.get("tool_calls", []))
        if passages:
            text += " Related passages from its texts:\n" + passages
    else:
        network = network or run.resources.network(state["kn_id"])
        name = topic["name"] if topic else (evidence[0]["instance_name"] if evidence else "")
        via_name = (ans.relation_reading(network, via, evidence[0].get("direction", "out")) if via
                    else _intent_name(state, network))
        text = ans.compose_answer(name, via_name, values, run.settings.max_listed)
    turn = {"question": state.get("question", ""), "topic": topic, "answer": text}
    history = [*(state.get("history") or []), turn][-HISTORY_TURNS:]
    update: Update = {"answer": text, "answers": values, "evidence": evidence, "history": history, "done": True,
                      "messages": [answer_message(text)], "unused": list(state.get("unused") or []),
                      "confidence": float(state.get("confidence") or 0.0)}
    if state.get("planner") != "llm" or graph is not None or calibrated is not None:
        if calibrated is None:
            update["cross_check"] = check_on_rows(state, run, list(values))
        update = settle(update, run.settings, calibrated, "query_graph" if graph is not None else "other",
                        state.get("question", ""))
    return update, f"{len(update['answers'])} values from {len({r['instance'] for r in evidence})} instances"


def _graph_answer(plan: QueryGraph, network: Any, execution: Any, max_listed: int) -> str:
    """``George Orwell — wrote → book, how many: 2 (1984；Animal Farm)``; ``book — lowest publication year: Pride
    and Prejudice (1813)``: the plan's subject, its path read in its directions, its constraints, the values."""
    subject = plan.topics[0].name if plan.topics else (plan.answer_type_label or plan.answer_type)
    reading = [" → ".join(ans.relation_reading(network, h.relation, h.direction) for h in plan.path)] \
        if plan.path else []
    ec = plan.entity_constraint
    if ec is not None:
        reading.append(f"also {' → '.join(ans.relation_reading(network, h.relation, h.direction) for h in ec.path)}"
                       f" {ec.topic.name}")
    lc = plan.literal_constraint
    if lc is not None:
        bound = f"{lc.value:g}..{(lc.value2 or lc.value):g}" if lc.op == "between" else f"{lc.op} {lc.value:g}"
        if plan.start_type:  # "book with publication year < 1900 — genre: romance"
            start = next((o.name or o.id for o in network.object_types if o.id == plan.start_type), plan.start_type)
            subject = f"{start} with {lc.label or lc.relation} {bound}"
        else:
            reading.append(f"{lc.label or lc.relation}{' (middle)' if lc.on == 'middle' else ''} {bound}")
    agg = plan.aggregation
    if agg is not None and agg.counts:
        rt = next((r for r in network.relation_types if r.id == agg.relation), None)
        far = (rt.target_object_type_id if agg.direction == "out" else rt.source_object_type_id) if rt else ""
        far_name = next((o.name or o.id for o in network.object_types if o.id == far), far)
        reading.append(f"{'most' if agg.op == 'argmax' else 'fewest'} {far_name} "
                       f"({ans.relation_reading(network, agg.relation, agg.direction)})")
    elif agg is not None and agg.op != "count":
        reading.append(f"{'highest' if agg.op == 'argmax' else 'lowest'} {agg.label or agg.relation}")
    head = f"{subject} — {', '.join(r for r in reading if r) or plan.answer_type_label}"
    problems = " ".join(f"({p})" for p in execution.problems)
    if agg is not None and agg.op == "count":
        items = list(dict.fromkeys(r["value"] for r in execution.evidence))
        shown = "；".join(items[:max_listed]) + (f" … ({len(items)} in all)" if len(items) > max_listed else "")
        kind = plan.answer_type_label or "instance"
        return f"{head}, how many {kind}: {execution.count or 0}" + (f" ({shown})" if shown else "") + \
            (f" {problems}" if problems else "")
    if not execution.answers:
        return f"{head}: nothing stored in the knowledge network matches." + (f" {problems}" if problems else "")
    shown_values = []
    for value in execution.answers[:max_listed]:
        said = next((r.get("property_value") for r in execution.evidence
                     if r["value"] == value and r.get("property_value") is not None), None)
        shown_values.append(f"{value} ({said})" if said is not None and (lc is not None or agg is not None)
                            else value)
    more = f" … ({len(execution.answers)} in all)" if len(execution.answers) > max_listed else ""
    return f"{head}: {'；'.join(shown_values)}{more}" + (f" {problems}" if problems else "")


def _network_of(state: AgentState, run: NetworkRun) -> Any:
    """The turn's network, or None when the turn was refused before it (an unknown network, bad input)."""
    if not state.get("schema") or not state.get("kn_id"):
        return None
    try:
        return run.resources.network(state["kn_id"])
    except NetworkNotFound:
        return None


def _what_to_name(state: AgentState, run: NetworkRun, network: Any) -> str:
    """``; name the author, book or genre as it is stored``: the network's own object types, those schema
    recall ranked first, then those with the most instances ("" when the network has none)."""
    if network is None:
        return ""
    try:
        counts = run.resources.store.network_stats(network.kn_id).get("instances_by_type", {})
    except NetworkNotFound:
        counts = {}
    types = ans.type_names(network, state.get("schema", {}).get("object_types") or [], counts)
    return f"; name the {types} as it is stored" if types else ""


def _intent_name(state: AgentState, network: Any) -> str:
    intents = state.get("schema", {}).get("intents") or []
    if not intents:
        return "the question"
    return ans.element_name(network, path_steps(intents[0][0])[-1][1] if not intents[0][0].startswith("prop:")
                            else parse_label(intents[0][0])[1])

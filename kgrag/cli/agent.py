"""Answering one question: ``kgrag ask`` (the agent, its steps printed as a tree; ``--thread`` keeps a
conversation) and ``kgrag query`` (one query mode's retrieval and answer).

    kgrag ask "Who wrote 1984?" --kn library; kgrag query "感冒的症状" --kn medical --mode local --only-need-context
"""

from __future__ import annotations

import json
from collections.abc import Callable
from enum import StrEnum
from typing import Annotated, Any

import typer
from pydantic import ValidationError

from kgrag.cli.above import above
from kgrag.cli.inputs import LLMStyle
from kgrag.cli.output import console, friendly_errors
from kgrag.config import get_settings
from kgrag.errors import KgragError
from kgrag.modes.params import MODES

__all__ = ["QueryModeName", "agent_answerer", "ask", "query_cmd"]


def agent_answerer(kn: str, llm: bool | None, kg: str | None = None, style: str | None = None,
                   readable_kns: tuple[str, ...] | None = None,
                   readable_kgs: tuple[str, ...] | None = None) -> Callable[..., dict[str, Any]]:
    """:func:`graphs.agent.run.agent_answerer` (imported on use: the agent graph is heavy to import)."""
    return above("graphs.agent.run").agent_answerer(kn, llm, kg, style, readable_kns, readable_kgs)


@friendly_errors
def ask(
    question: Annotated[str, typer.Argument(help="The question, in the network's language.")],
    kn: Annotated[str, typer.Option(help="Network id (kgrag kn list).")] = "medical",
    kg: Annotated[str | None, typer.Option(help="A KG instead of a network (metaqa, demo, an import: kgrag kg list).")] = None,
    thread: Annotated[str | None, typer.Option(help="Conversation thread id: a follow-up resolves to its topic.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the final state as JSON.")] = False,
    llm: Annotated[bool | None, typer.Option("--llm/--no-llm", help="Plan with the LLM (default: when "
                                             "KGRAG_LLM_BASE_URL is set).")] = None,
    style: Annotated[LLMStyle, typer.Option(help="With --kg and an LLM: <kg-query> text or tool calls.")] = LLMStyle.kg_query,
    strict_confidence: Annotated[bool, typer.Option("--strict-confidence", help="Exit with 1 also when the answer's "
                                                    "confidence is below the calibrated threshold (KGRAG_AGENT_MIN_"
                                                    "CONFIDENCE when set), even when answers were given.")] = False,
) -> None:
    """Answer one question with the agent (keywords → schema recall → contextual recall → tool calls → answer)
    and print each step as a tree. Exits with 1 when it could not answer (no answer values, or withheld as not
    sure enough), saying why; with --strict-confidence also when its confidence is below the threshold."""
    from kgrag.agent.turn.node import question_problem
    from kgrag.terminal.turn_tree import state_tree
    from kgrag.threads import load_history, save_history

    settings = get_settings()
    # refused here, in one line, before anything echoes it back (an over-long question would fill the screen)
    try:
        context = above("graphs.agent.context")
        agent_settings = context.resolve(context.AgentContext(kn_id=kn, kg=kg), settings)
    except ValidationError as exc:  # an empty or over-long --kn / --kg
        error = exc.errors()[0]
        raise KgragError(f"invalid --{'kn' if error['loc'][0] == 'kn_id' else error['loc'][0]}: {error['msg']}") from None
    problem = question_problem(question, agent_settings)
    if problem:
        raise KgragError(problem)
    try:
        history = load_history(settings, thread) if thread else []
    except ValueError as exc:
        raise KgragError(str(exc)) from None
    state = agent_answerer(kn, llm, kg, style.value)(question, history)
    if thread:
        save_history(settings, thread, state.get("history", []))
    if json_out:
        print(json.dumps(state, ensure_ascii=False))
    else:
        console.print(state_tree(state))
    why = _no_answer(state)
    if why:
        raise KgragError(f"no answer: {why}")
    if strict_confidence:
        from kgrag.agent.turn.row_plans import calibrated_threshold

        threshold = agent_settings.min_confidence if agent_settings.min_confidence is not None \
            else calibrated_threshold()
        confidence = float(state.get("confidence") or 0.0)
        if confidence < threshold:
            raise KgragError(f"not sure: confidence {confidence:.2f} is below {threshold:.2f} (--strict-confidence)")


def _no_answer(state: dict) -> str | None:
    """Why the agent's final state holds no answer (its errors, else its "I could not …" sentence), or None: it
    answered with values, or the LLM answered in its own words without an error."""
    if state.get("answers"):
        return None
    if state.get("planner") == "llm" and state.get("answer") and not state.get("errors"):
        return None
    return "; ".join(state.get("errors") or []) or state.get("answer") or "the agent gave no answer"


#: the query modes as a choice for typer (one source: kgrag.modes.params.MODES)
QueryModeName = StrEnum("QueryModeName", {mode: mode for mode in MODES})


@friendly_errors
def query_cmd(
    question: Annotated[str, typer.Argument(help="The question, in the network's language.")],
    kn: Annotated[str, typer.Option(help="Network id (kgrag kn list).")] = "medical",
    mode: Annotated[QueryModeName, typer.Option(help="Query mode (spec query-modes.md).")] = QueryModeName.mix,
    top_k: Annotated[int, typer.Option(help="Entities retrieved.")] = 40,
    chunk_top_k: Annotated[int, typer.Option(help="Chunks kept per chunk route.")] = 20,
    max_total_tokens: Annotated[int, typer.Option(help="Whole prompt budget.")] = 30000,
    only_need_context: Annotated[bool, typer.Option("--only-need-context", help="Return the context only.")] = False,
    only_need_prompt: Annotated[bool, typer.Option("--only-need-prompt", help="Return the prompt only.")] = False,
    hl: Annotated[list[str] | None, typer.Option("--hl", help="Preset high-level keyword (repeatable).")] = None,
    ll: Annotated[list[str] | None, typer.Option("--ll", help="Preset low-level keyword (repeatable).")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print {response, context, raw_data} as JSON.")] = False,
) -> None:
    """Retrieve (and answer) in one query mode: local / global / hybrid / naive / mix / bypass."""
    from kgrag.llm.client import ChatClient
    from kgrag.modes.params import QueryParam
    from kgrag.modes.query import kg_query
    from kgrag.modes.render import result_summary
    from kgrag.network.store import NetworkStore

    settings = get_settings()
    try:
        param = QueryParam(mode=mode.value, top_k=top_k, chunk_top_k=chunk_top_k, max_total_tokens=max_total_tokens,
                           only_need_context=only_need_context, only_need_prompt=only_need_prompt,
                           hl_keywords=hl or [], ll_keywords=ll or [])
    except ValidationError as exc:
        raise KgragError(f"invalid query parameters: {exc.errors()[0]['loc'][0]}: {exc.errors()[0]['msg']}") from None
    store = NetworkStore(settings.db_url)
    llm = ChatClient.from_settings(settings) if settings.llm_enabled and not (only_need_context or only_need_prompt) else None
    try:
        result = kg_query(question, store, kn, param, llm)
    except LookupError:
        raise KgragError(f"knowledge network {kn!r} not found (kgrag kn list; kgrag kn load {kn})") from None
    except ValueError as exc:
        raise KgragError(str(exc)) from None
    finally:
        store.close()
        if llm is not None:
            llm.close()
    if json_out:
        print(json.dumps(result.model_dump(mode="json"), ensure_ascii=False))
        return
    console.print(result_summary(question, result))

"""Run the agent graph in-process: one function the CLI (``kgrag ask`` / ``agent-eval``) and MCP's ``ask`` share.

    state = agent_answerer("medical", llm=None)("百日咳有哪些症状")  # the final state: answer, steps, trace
"""

from __future__ import annotations

from collections.abc import Callable

from graphs.agent.context import AgentContext
from graphs.agent.graph import graph
from kgrag.agent.turn.messages import plain_state

__all__ = ["agent_answerer"]


def agent_answerer(kn: str, llm: bool | None, kg: str | None = None, style: str | None = None,
                   readable_kns: tuple[str, ...] | None = None, readable_kgs: tuple[str, ...] | None = None
                   ) -> Callable[..., dict]:
    """``answer(question, history) -> final state`` running the agent graph in-process (on the triple graph
    ``kg`` when given, else on the knowledge network ``kn``); ``llm`` None: plan with the LLM when one is set.
    ``readable_kns`` / ``readable_kgs``: the caller's key's graphs (None: all; any other is answered as one not
    there). The state is plain JSON data (its ``messages`` as dicts)."""
    context = AgentContext(kn_id=kn, use_llm=llm, kg=kg, llm_style=style, readable_kns=readable_kns,
                           readable_kgs=readable_kgs)
    where = {"kg": kg} if kg else {"kn_id": kn}

    def answer(question: str, history: list | None = None) -> dict:
        return plain_state(graph.invoke({"question": question, **where, "history": history or []}, context=context))

    return answer

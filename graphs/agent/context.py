"""The run context of the agent graph (LangGraph ``context_schema``): per-run settings, each optional; what a run
leaves out comes from :class:`kgrag.config.Settings` (``KGRAG_AGENT_*``, ``KGRAG_LLM_BASE_URL``).

    graph.invoke({"question": "百日咳有哪些症状"}, context=AgentContext(kn_id="medical", max_tool_calls=2))
"""

from __future__ import annotations

from dataclasses import dataclass

from kgrag.agent.turn.state import AgentSettings
from kgrag.config import Settings, get_settings

__all__ = ["AgentContext", "resolve"]


@dataclass
class AgentContext:
    kn_id: str | None = None
    kg: str | None = None
    llm_style: str | None = None
    max_tool_calls: int | None = None
    use_llm: bool | None = None
    max_question_chars: int | None = None
    query_graphs: bool | None = None
    min_confidence: float | None = None
    table_plans: bool | None = None
    readable_kns: tuple[str, ...] | None = None
    readable_kgs: tuple[str, ...] | None = None


def resolve(context: AgentContext | None, settings: Settings | None = None) -> AgentSettings:
    """The run's :class:`AgentSettings` (validated and bounded): the context's values over the defaults."""
    settings = settings or get_settings()
    defaults = {"kn_id": settings.agent_kn_id, "max_tool_calls": settings.agent_max_tool_calls,
                "use_llm": settings.llm_enabled, "query_graphs": settings.agent_query_graphs,
                "min_confidence": settings.agent_min_confidence, "table_plans": settings.agent_table_plans}
    given = {k: v for k, v in (vars(context) if context is not None else {}).items() if v is not None}
    return AgentSettings(**{**defaults, **given})

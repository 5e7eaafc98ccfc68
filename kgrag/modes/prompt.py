"""Stage 4 input of the query modes: the LLM prompt (spec ``buildPrompt``).

    messages = build_messages("百日咳有哪些症状", ctx.text, param)   # [system (template + context), user]

The system message is ``kgrag/llm/prompts/query_modes.txt`` filled with the conversation history (the last
``param.history_turns`` user/assistant pairs, one ``role: content`` line each), ``response_type``,
``user_prompt`` (an extra instruction line, when given) and the context (entities JSON, relations JSON, chunks
with reference ids, reference list); the user message is the question.
"""

from __future__ import annotations

from kgrag.llm.prompts import load_prompt
from kgrag.modes.params import QueryParam

__all__ = ["build_messages", "format_history", "prompt_text"]


def format_history(param: QueryParam) -> str:
    turns = [m for m in param.conversation_history if m.role in ("user", "assistant")]
    keep = turns[-2 * param.history_turns :] if param.history_turns else []
    return "\n".join(f"{m.role}: {m.content}" for m in keep) or "(none)"


def build_messages(query: str, context_text: str, param: QueryParam) -> list[dict[str, str]]:
    system = load_prompt("query_modes").format(
        history=format_history(param),
        response_type=param.response_type,
        user_prompt=f"- {param.user_prompt}" if param.user_prompt else "",
        context_data=context_text,
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": query}]


def prompt_text(messages: list[dict[str, str]]) -> str:
    """The messages as one readable text (what ``only_need_prompt`` returns)."""
    return "\n\n".join(f"---{m['role']}---\n{m['content']}" for m in messages)

"""LLM access: an OpenAI-compatible chat client, per-session usage accounting and validated JSON output.

Nothing here is required: every LLM step in kgrag has an LLM-free strategy, used when
``Settings.llm_base_url`` is empty (see ``Settings.llm_enabled``).
"""

from kgrag.llm.accounting import Usage, UsageLedger
from kgrag.llm.client import AsyncChatClient, ChatClient, ChatResult, LLMHTTPError
from kgrag.llm.json_output import JSONExtractionError, achat_json, chat_json, extract_json, parse_reply

__all__ = [
    "AsyncChatClient",
    "ChatClient",
    "ChatResult",
    "JSONExtractionError",
    "LLMHTTPError",
    "Usage",
    "UsageLedger",
    "achat_json",
    "chat_json",
    "extract_json",
    "parse_reply",
]

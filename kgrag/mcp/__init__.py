"""kgrag over MCP: the agent-facing tools (kn_search, context_search, query_object_instance,
query_instance_subgraph, query_modes, get_relations, get_triples, ask) served on stdio or streamable HTTP.

    kgrag mcp --transport http --port 8765    # see kgrag.mcp.server for the contract, kgrag.mcp.tools for the tools
"""

from kgrag.mcp.server import McpConfig, build_http_app, build_server, serve
from kgrag.mcp.tools import TOOLS

__all__ = ["TOOLS", "McpConfig", "build_http_app", "build_server", "serve"]

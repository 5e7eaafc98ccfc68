"""KG tools for agents (spec kg-tools.md, the specification of the KG tools for LLM agents):
``get_relations`` / ``get_triples`` over SPARQL with CVT flattening."""

from kgrag.tools.client import KGClient
from kgrag.tools.config import KGToolsConfig
from kgrag.tools.session import KGSession

__all__ = ["KGClient", "KGSession", "KGToolsConfig"]

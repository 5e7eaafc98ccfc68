"""kgrag: turn a knowledge graph into agent-ready context and answers."""

__version__ = "0.1.0"

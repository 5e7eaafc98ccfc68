"""Query modes (spec query-modes.md, the specification of LightRAG-style query modes): LightRAG-style local /
global / hybrid / naive / mix / bypass retrieval over a knowledge network whose instances carry text. One job
per file: ``params`` (QueryParam), ``keywords``, ``index`` (the in-memory stores), ``search``, ``context``
(token budgets), ``prompt``, ``query`` (kg_query)."""

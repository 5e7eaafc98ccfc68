"""A knowledge network's shape, shared by the store, the loaders and search: the ontology and instance records
(:mod:`~kgrag.network.schema.model`), their SQL tables (:mod:`~kgrag.network.schema.tables`) and conditions over
them compiled to SQL (:mod:`~kgrag.network.schema.conditions`). Imports nothing else of ``kgrag.network``."""

"""Knowledge networks: ontology model, SQL instance store with text/vector indexes, conditions, loaders.

Sub-packages, each importing only those listed before it: :mod:`~kgrag.network.schema` (model, tables,
conditions), :mod:`~kgrag.network.text` (chunking, aliases, the network embedder), :mod:`~kgrag.network.store`
(:class:`~kgrag.network.store.NetworkStore`), :mod:`~kgrag.network.loaders`, :mod:`~kgrag.network.sync` (keeping a
stored network in step with its source or tables). The modules at this level
(``service``, ``domain_vectors``, ``cli``) import the sub-packages; no sub-package imports them."""

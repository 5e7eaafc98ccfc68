"""A prepared KG's versions: which one is current, how the next one is made from a delta or a re-import, and how a
serving process follows them. ``kgrag kg update`` (:mod:`kgrag.prep.update`) and a re-``prepare``
(:mod:`kgrag.prep.steps`) drive these modules; the agent, the tools and the servers read through them.

    stores = LiveStores(settings, ["mykg"]); stores["mykg"]   # the store of mykg's current version, one stat

- :mod:`~kgrag.graph.versions.version_file` — ``version.json``: the current version and its files
  (``read_version``, ``write_version``, ``graph_file``, ``store_dir``) and ``version_token`` (one ``stat``).
- :mod:`~kgrag.graph.versions.delta` — triples to add and delete → the new CSR graph and the store's changes
  (``graph_delta``, ``TripleStoreChanges``).
- :mod:`~kgrag.graph.versions.diff` — two imports of one KG → the store's changes between them (``graph_diff``).
- :mod:`~kgrag.graph.versions.commit` — building a version on disk: the update lock, the store checkpoint that
  takes the changes, the atomic commit and the pruning of old versions.
- :mod:`~kgrag.graph.versions.stores` — a KG's store at its current version (``open_store``, ``store_path``) and
  ``LiveStores``, the ``{kg: store}`` map a server holds, following each KG's version.

The one cache that follows versions is :class:`kgrag.versioned.VersionedCache` (``LiveStores``, the agent's triple
graphs, the H-RAG reasoners).
"""

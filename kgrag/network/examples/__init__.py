"""Starting-point networks shipped with the package (package data): ``library/`` is what ``kgrag kn init DIR``
writes and the same files as the repository's ``examples/library/`` (a test keeps them identical)."""

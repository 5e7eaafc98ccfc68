"""``python -m kgrag.cli ARGS``: the ``kgrag`` command line, as the tests and the server launchers run it.

    python -m kgrag.cli deploy list
"""

from kgrag.cli import main

main()

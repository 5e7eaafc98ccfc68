"""Deferred vectors (issue 53): how soon a big network answers when ``kgrag kn load --defer-vectors`` makes its
instance vectors after its rows, against the plain load (vectors with the rows) in the same run.

    python -m bench.deferred_vectors --size 1000000 [--no-baseline] [--short]

On the generated shop network (bench/big_network_data.py, seed 0; ``--short``: without its descriptions, short
names only — issue 53's short-name network), each load a fresh process into an empty
database with a cold embedding cache (a fresh work dir), measured from outside (bench.big_network.run_measured:
wall seconds, peak RSS of the process tree):
- ``deferred``: ``searchable_s`` — when the command says the network answers from its text index and conditions
  (its rows, links and full-text index committed; it prints its own elapsed seconds), ``vectors_s`` — the rest
  (the instance vectors, then the ANN bases), ``seconds`` — the whole command;
- ``baseline``: the plain load (``seconds``: when it answers, vectors included).
Ratios: deferred searchable / baseline seconds, deferred total / baseline seconds. Results:
bench/results/deferred_vectors.json and a table.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.big_network import ROOT, dataset, progress, run_env, run_measured
from bench.common import write_result

SEARCHABLE = re.compile(r"answers from its text index and conditions now \((\d+(?:\.\d+)?) s\)")


def load(size: int, root: Path, defer: bool, short: bool = False) -> dict[str, Any]:
    """One measured ``kgrag kn load`` of the generated network into a fresh database."""
    schema = dataset(size, root / "data", short=short)
    work = Path(tempfile.mkdtemp(prefix="deferred-" if defer else "eager-", dir=root))
    env = run_env(work)
    cmd = [sys.executable, "-m", "kgrag.cli", "kn", "load", "--db", f"sqlite:///{work / 'kn.db'}", str(schema),
           *(["--defer-vectors"] if defer else [])]
    log = work / "load.log"
    progress(f"{size:,}: {'deferred' if defer else 'plain'} load")
    fig = run_measured(cmd, env, log)
    if defer:
        said = SEARCHABLE.findall(" ".join(log.read_text(encoding="utf-8", errors="replace").split()))
        if not said:
            raise RuntimeError(f"the deferred load never said it answers; see {log}")
        fig["searchable_s"] = float(said[-1])
        fig["vectors_s"] = round(fig["seconds"] - fig["searchable_s"], 1)
    progress(f"{size:,}: {fig}")
    return fig


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--baseline", action=argparse.BooleanOptionalAction, default=True,
                        help="also the plain load in the same run (the ratio's denominator)")
    parser.add_argument("--short", action="store_true", help="the network without descriptions (short names)")
    parser.add_argument("--root", type=Path, default=ROOT / "work" / "big_network")
    args = parser.parse_args(argv)
    args.root.mkdir(parents=True, exist_ok=True)
    schema = dataset(args.size, args.root / "data", short=args.short)  # generated once per size and profile
    counts = json.loads(next(schema.parent.glob(".generated-v*")).read_text())
    deferred = load(args.size, args.root, defer=True, short=args.short)
    baseline = load(args.size, args.root, defer=False, short=args.short) if args.baseline else {}
    from rich.console import Console
    from rich.table import Table

    table = Table("load", "answers after s", "vectors after s", "whole command s", "peak RSS GB",
                  title=f"bench.deferred_vectors: {counts['instances']:,} instances + {counts['links']:,} links"
                        f"{' (short names)' if args.short else ''}")
    table.add_row("--defer-vectors", str(deferred["searchable_s"]), str(deferred["vectors_s"]),
                  str(deferred["seconds"]), str(deferred["peak_rss_gb"]))
    if baseline:
        table.add_row("plain (baseline)", str(baseline["seconds"]), "—", str(baseline["seconds"]),
                      str(baseline["peak_rss_gb"]))
    Console().print(table)
    ratio = ({"searchable": round(deferred["searchable_s"] / baseline["seconds"], 3),
              "complete": round(deferred["seconds"] / baseline["seconds"], 3)} if baseline else {})
    write_result("deferred_vectors_short" if args.short else "deferred_vectors",
                 {"size": args.size, **counts, "deferred": deferred}, baseline, ratio,
                 split=f"generated shop network ({args.size:,}, seed 0{', no descriptions' if args.short else ''}),"
                       " SQLite, cold embedding cache",
                 n=counts["instances"])


if __name__ == "__main__":
    main()

"""The ``kgrag`` command line (typer): this module builds ``app`` from one module per command group; every command
has ``--help``; errors print one line, no traceback (:mod:`kgrag.cli.output`).

    kgrag --help; python -m kgrag.cli prepare --dataset demo

Groups: :mod:`~kgrag.cli.data` (prepare, data list/download), :mod:`~kgrag.cli.kg` (kg list, sparql, tools),
:mod:`~kgrag.cli.kn` (kn …), :mod:`~kgrag.cli.train` (train-retriever, train-intent, train-gflownet,
train-planner),
:mod:`~kgrag.cli.evaluate` (retriever-eval, eval, agent-eval), :mod:`~kgrag.cli.agent` (ask, query),
:mod:`~kgrag.cli.serve` (serve, mcp), :mod:`~kgrag.cli.deploy` (deploy …), :mod:`~kgrag.cli.run` (run) and
:mod:`~kgrag.cli.settings` (config).

The commands import the rest on use: flows (Prefect, ~1 s), the agent graph, H-RAG's evaluation (torch), the API
and MCP servers (uvicorn), the LLM client (httpx), the stores, the dataset readers: each 0.04-2.6 s on top of this
package (measured after `import kgrag.cli`), which `kgrag --help` and every other command would pay otherwise.
"""

from __future__ import annotations

import os
from types import ModuleType

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # no weight-loading bars in a command's output

import typer  # noqa: E402

from kgrag.cli.above import provide  # noqa: E402
from kgrag.cli.access import audit_cmd, keys_app  # noqa: E402
from kgrag.cli.agent import ask, query_cmd  # noqa: E402
from kgrag.cli.data import data_app, prepare  # noqa: E402
from kgrag.cli.deploy import deploy_app  # noqa: E402
from kgrag.cli.evaluate import agent_eval_cmd, eval_cmd, retriever_eval_cmd  # noqa: E402
from kgrag.cli.kg import kg_app, sparql, tools  # noqa: E402
from kgrag.cli.kn import kn_app  # noqa: E402
from kgrag.cli.run import run  # noqa: E402
from kgrag.cli.serve import mcp_cmd, serve  # noqa: E402
from kgrag.cli.settings import show_config  # noqa: E402
from kgrag.cli.train import (  # noqa: E402
    train_gflownet_cmd,
    train_intent_cmd,
    train_planner_cmd,
    train_retriever_cmd,
)

__all__ = ["app", "main"]

app = typer.Typer(
    name="kgrag",
    help="kgrag: turn a KG (a graph of triples) or a network (typed objects and links in rows) into agent-ready "
         "context and answers.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(data_app, name="data")
app.add_typer(kn_app, name="kn")
app.add_typer(kg_app, name="kg")
app.add_typer(deploy_app, name="deploy")
app.add_typer(keys_app, name="keys")

# the order of `kgrag --help`
app.command("prepare")(prepare)
app.command("run")(run)
app.command("sparql")(sparql)
app.command("serve")(serve)
app.command("mcp")(mcp_cmd)
app.command("tools")(tools)
app.command("train-retriever")(train_retriever_cmd)
app.command("train-intent")(train_intent_cmd)
app.command("train-planner")(train_planner_cmd)
app.command("retriever-eval")(retriever_eval_cmd)
app.command("train-gflownet")(train_gflownet_cmd)
app.command("eval")(eval_cmd)
app.command("ask")(ask)
app.command("query")(query_cmd)
app.command("agent-eval")(agent_eval_cmd)
app.command("config")(show_config)
app.command("audit")(audit_cmd)


def _above(module: str) -> ModuleType:
    """The modules of ``flows/`` and ``graphs/`` the commands run (:mod:`kgrag.cli.above`), imported on use: this
    entry point is the one module of the command line that imports them."""
    if module == "flows.prepare_data":
        import flows.prepare_data as loaded
    elif module == "flows.train_retriever":
        import flows.train_retriever as loaded
    elif module == "flows.retriever_eval":
        import flows.retriever_eval as loaded
    elif module == "flows.train_gflownet":
        import flows.train_gflownet as loaded
    elif module == "flows.train_intent":
        import flows.train_intent as loaded
    elif module == "flows.train_planner":
        import flows.train_planner as loaded
    elif module == "flows.evaluate":
        import flows.evaluate as loaded
    elif module == "graphs.agent.run":
        import graphs.agent.run as loaded
    elif module == "graphs.agent.context":
        import graphs.agent.context as loaded
    else:
        raise KeyError(f"the command line runs no {module!r}")
    return loaded


provide(_above)


def main() -> None:
    """The ``kgrag`` console script."""
    app()

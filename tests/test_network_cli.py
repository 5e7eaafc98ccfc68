"""``kgrag kn`` sub-app: load (idempotent), list, show, query, errors, --help."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kgrag.cli.kn import kn_app
from kgrag.config import Settings

runner = CliRunner()


def invoke(*args: str):  # noqa: ANN201
    return runner.invoke(kn_app, list(args), catch_exceptions=False)


def test_help_for_every_command() -> None:
    result = invoke("--help")
    assert result.exit_code == 0
    for command in ("load", "list", "show", "query"):
        assert command in result.output
        sub = invoke(command, "--help")
        assert sub.exit_code == 0 and len(sub.output) > 100


def test_load_list_show_query(
    work_settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rich.console import Console

    import kgrag.cli.kn as cli

    monkeypatch.setattr(cli, "console", Console(width=250))
    db = f"sqlite:///{tmp_path / 'kn.db'}"
    assert "no knowledge networks loaded" in invoke("list", "--db", db).output
    for _ in range(2):  # idempotent
        result = invoke("load", "demo", "--db", db)
        assert result.exit_code == 0, result.output
        assert "loaded demo" in result.output and "230" in result.output
    listing = invoke("list", "--db", db)
    assert "demo" in listing.output and "476" in listing.output
    show = invoke("show", "demo", "--db", db)
    assert show.exit_code == 0 and "Film" in show.output and "film.film.directed_by" in show.output
    # the operations as they are, not eaten as rich markup (a "[knn,…]" reads as a style tag)
    assert "name:string [knn,match,==,!=,in,prefix,contain,like,regex,exist]" in show.output
    cond = json.dumps({"operation": "prefix", "field": "name", "value": "Neon"})
    query = invoke("query", "demo", "Film", "--condition", cond, "--db", db)
    assert query.exit_code == 0, query.output
    hits = [json.loads(line) for line in query.output.splitlines() if line.strip()]
    assert [h["properties"]["name"] for h in hits] == ["Neon Rain"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("show", "nope"), "no knowledge network 'nope'"),
        (("query", "demo", "Film", "--condition", "{not json"), "not valid JSON"),
        (("query", "demo", "Film", "--condition", '{"operation": "fly"}'), "not a valid condition"),
        (
            ("query", "demo", "Film", "--condition", '{"operation": "==", "field": "colour", "value": 1}'),
            "unknown field 'colour'",
        ),
        (("query", "demo", "Planet"), "unknown object type 'Planet'"),
    ],
)
def test_errors_are_one_line(
    work_settings: Settings, tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    db = f"sqlite:///{tmp_path / 'kn.db'}"
    if args[0] == "query":
        from kgrag.network.loaders.demo import demo_network
        from kgrag.network.schema.model import KnowledgeNetwork
        from kgrag.network.store import NetworkStore

        network, instances, _ = demo_network()
        # schema + instances only, no embeddings needed for these errors: one object type, no relations
        film = next(ot for ot in network.object_types if ot.id == "Film")
        small = KnowledgeNetwork(
            kn_id="demo",
            name="demo",
            object_types=[
                film.model_copy(
                    update={
                        "data_properties": [
                            p.model_copy(update={"condition_operations": ["=="]})
                            for p in film.data_properties
                        ]
                    }
                )
            ],
        )
        NetworkStore(db).load(small, [i for i in instances if i.object_type_id == "Film"], [])
    result = runner.invoke(kn_app, [*args, "--db", db])
    assert result.exit_code == 1
    assert message in result.output
    assert "Traceback" not in result.output


TINY = Path(__file__).parent / "network_tiny" / "clinic.yaml"


def test_load_a_schema_file_and_show_prints_operations_literally(
    work_settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rich.console import Console

    import kgrag.cli.kn as cli

    monkeypatch.setattr(cli, "console", Console(width=250))
    db = f"sqlite:///{tmp_path / 'kn.db'}"
    loaded = invoke("load", str(TINY), "--db", db)
    assert loaded.exit_code == 0 and "loaded clinic" in loaded.output, loaded.output
    show = invoke("show", "clinic", "--db", db)
    assert show.exit_code == 0, show.output
    # the operation lists in square brackets, not swallowed as rich markup
    assert "name:string [knn,match,==,prefix]" in show.output
    assert "cost:integer [>,<,range]" in show.output and "cure_way:string[] [contain]" in show.output


def test_a_yaml_syntax_error_is_one_line_with_file_and_line(work_settings: Settings, tmp_path: Path) -> None:
    bad = tmp_path / "clinic.yaml"
    bad.write_text("kn_id: clinic\nname: Tiny clinic\nobject_types:\n  - id: Disease\n    name: [疾病\n"
                   "    comment: x\n", encoding="utf-8")
    result = runner.invoke(kn_app, ["load", str(bad), "--db", f"sqlite:///{tmp_path / 'kn.db'}"])
    assert result.exit_code == 1
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"error: {bad}:6:12: not valid YAML: "), result.output
    assert "started on line 5" in lines[0]


def test_an_unknown_network_name_says_what_load_takes(work_settings: Settings, tmp_path: Path) -> None:
    result = runner.invoke(kn_app, ["load", "nope", "--db", f"sqlite:///{tmp_path / 'kn.db'}"])
    assert result.exit_code == 1
    assert "unknown network 'nope'; choose one of medical, metaqa, demo, synthetic or give a schema file" in (
        result.output)

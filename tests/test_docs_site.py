"""The docs site builds with ``mkdocs build --strict`` (every page in the nav, every link and anchor resolving),
its generated reference pages name every registered ``kgrag`` command with its options and every HTTP route of
``kgrag serve`` with its request body's fields (computed here from the typer app and the FastAPI app, not typed),
the layout page maps every folder and top-level module of ``kgrag/``, and the README stays a front door.

    .venv/bin/python -m pytest -q -p no:xdist tests/test_docs_site.py
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_HEADINGS = ("h1", "h2", "h3", "h4")


class _Sections(HTMLParser):
    """A built page's text by heading: ``{heading text: the text up to the next heading}``."""

    def __init__(self) -> None:
        super().__init__()
        self.sections: dict[str, str] = {}
        self._current: str | None = None
        self._heading: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag in _HEADINGS:
            self._heading = []

    def handle_endtag(self, tag: str) -> None:
        if tag in _HEADINGS and self._heading is not None:
            self._current = "".join(self._heading).replace("¶", "").strip()
            self.sections.setdefault(self._current, "")
            self._heading = None

    def handle_data(self, data: str) -> None:
        if self._heading is not None:
            self._heading.append(data)
        elif self._current is not None:
            self.sections[self._current] += data


def _sections(page: Path) -> dict[str, str]:
    parser = _Sections()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser.sections


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    return out


def _commands() -> list[tuple[str, object]]:
    """Every registered command path (hidden ones too) with its command, walked from the typer app."""
    import typer.main

    from kgrag.cli import app

    root = typer.main.get_command(app)
    found: list[tuple[str, object]] = []

    def walk(command: object, path: str, ctx: object) -> None:
        found.append((path, command))
        if hasattr(command, "list_commands"):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                walk(sub, f"{path} {name}", sub.context_class(sub, info_name=name, parent=ctx))

    walk(root, "kgrag", root.context_class(root, info_name="kgrag"))
    return found


def test_cli_reference_names_every_command_and_option(site: Path) -> None:
    sections = _sections(site / "reference" / "cli" / "index.html")
    commands = _commands()
    assert len(commands) > 30  # the walk reached the groups' subcommands
    missing, options_missing = [], []
    for path, command in commands:
        if path not in sections:
            missing.append(path)
            continue
        for param in command.params:
            names = [*param.opts, *getattr(param, "secondary_opts", [])]
            if getattr(param, "param_type_name", "") == "option" and not getattr(param, "hidden", False):
                options_missing += [f"{path} {n}" for n in names if n not in sections[path]]
    assert not missing, f"commands without a section on the CLI page: {missing}"
    assert not options_missing, f"options not on their command's section: {options_missing}"


def test_http_reference_names_every_route_and_body_field(site: Path) -> None:
    from kgrag.api.app import create_app

    schema = create_app().openapi()
    models = schema["components"]["schemas"]
    sections = _sections(site / "reference" / "http" / "index.html")
    routes = [(method.upper(), path, op) for path, item in schema["paths"].items() for method, op in item.items()]
    assert len(routes) >= 20
    missing, body_missing = [], []
    for method, path, op in routes:
        heading = f"{method} {path}"
        if heading not in sections:
            missing.append(heading)
            continue
        for media in (op.get("requestBody") or {}).get("content", {}).values():
            ref = media["schema"].get("$ref", "")
            name = ref.rsplit("/", 1)[-1]
            expected = [name, *models.get(name, {}).get("properties", {})] if name else []
            body_missing += [f"{heading}: {n}" for n in expected if n not in sections[heading]]
    assert not missing, f"routes without a section on the HTTP page: {missing}"
    assert not body_missing, f"request-body models / fields not on their route's section: {body_missing}"


def test_layout_maps_every_package_folder_and_module() -> None:
    layout = (ROOT / "docs" / "concepts" / "layout.md").read_text(encoding="utf-8")
    package = ROOT / "kgrag"
    folders = sorted({p.parent.relative_to(package).as_posix() for p in package.rglob("*.py")
                      if "__pycache__" not in p.parts and p.parent != package})
    assert "graph/versions" in folders and "network/sync" in folders
    modules = sorted(p.name for p in package.glob("*.py") if p.name != "__init__.py")
    missing = [f"{f}/" for f in folders if not re.search(rf"^\s+{re.escape(f)}/\s", layout, re.M)]
    missing += [m for m in modules if not re.search(rf"^\s+{re.escape(m)}\s", layout, re.M)]
    assert not missing, f"folders and modules of kgrag/ not on docs/concepts/layout.md: {missing}"


def test_readme_is_a_front_door() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 250, "README.md is the front door: the rest belongs in docs/"
    for command in ("make run", "make test", "kgrag kg import", "kgrag kn init"):
        assert command in readme
    targets = re.findall(r"\]\(((?!https?:|#)[^)#\s]+)", readme)
    assert any(t.startswith("docs/") for t in targets)
    broken = [t for t in targets if not (ROOT / t).exists()]
    assert not broken, f"README.md links to files that do not exist: {broken}"

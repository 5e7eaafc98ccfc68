"""mkdocs hook: the CLI and HTTP reference pages, generated from the code at every build, so they cannot go stale.

A page holding the line ``<!-- kgrag:cli-reference -->`` gets every ``kgrag`` command and subcommand (its help,
usage, arguments and options), read through click's introspection of ``typer.main.get_command(app)``; a page
holding ``<!-- kgrag:http-reference -->`` gets every route of ``kgrag serve`` (method, path, summary, description,
parameters, request-body model with its fields, responses) and the models they use, from the FastAPI app's
``openapi()``. Offline and fast: nothing is fetched, no server starts (the app is built, its lifespan never runs).

    mkdocs build --strict                           # mkdocs.yml: hooks: [docs/hooks/reference.py]
    python docs/hooks/reference.py cli | http       # the generated Markdown on stdout
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from typing import Any

CLI_MARKER = "<!-- kgrag:cli-reference -->"
HTTP_MARKER = "<!-- kgrag:http-reference -->"
_METHODS = ("get", "put", "post", "delete", "patch", "head", "options")


# ------------------------------------------------------------------------------------------------ markdown text
def _escape(text: str) -> str:
    """``text`` safe as Markdown prose: ``<`` / ``>`` / ``*`` escaped outside code spans (help texts write
    ``<KGRAG_WORK_DIR>``, ``head<TAB>relation``, ``KGRAG_*``), code spans kept as they are."""
    parts = re.split(r"(``.+?``|`[^`]+`)", text)
    return "".join(p if p.startswith("`") else
                   p.replace("<", "&lt;").replace(">", "&gt;").replace("*", r"\*") for p in parts)


def _prose(text: str | None) -> str:
    """A docstring-style help text as Markdown paragraphs: hard-wrapped lines joined, blank lines kept."""
    if not text:
        return ""
    paragraphs = re.split(r"\n\s*\n", text.strip())
    return "\n\n".join(_escape(" ".join(line.strip() for line in p.splitlines() if line.strip()))
                       for p in paragraphs)


def _cell(text: str) -> str:
    """One table cell: one line, pipes escaped outside code spans (the table parser keeps those whole)."""
    parts = re.split(r"(``.+?``|`[^`]+`)", " ".join(text.split()))
    return "".join(p if p.startswith("`") else p.replace("|", r"\|") for p in parts)


def _slug(*parts: str) -> str:
    return "-".join(re.sub(r"[^a-z0-9]+", "-", p.lower()).strip("-") for p in parts if p)


# ------------------------------------------------------------------------------------------------------- CLI
def _walk(command: Any, ctx: Any) -> Iterator[tuple[Any, Any]]:
    """Every command under ``command`` (itself first), depth first in registration order, hidden ones too."""
    yield command, ctx
    if hasattr(command, "list_commands"):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None:
                yield from _walk(sub, sub.context_class(sub, info_name=name, parent=ctx))


def cli_commands(app: Any = None) -> list[tuple[str, Any, Any]]:
    """``(command path, command, context)`` for the root ``kgrag`` and every command and subcommand."""
    import typer.main

    if app is None:
        from kgrag.cli import app
    root = typer.main.get_command(app)
    return [(ctx.command_path, cmd, ctx) for cmd, ctx in _walk(root, root.context_class(root, info_name="kgrag"))]


def _short_help(command: Any) -> str:
    text = " ".join((command.short_help or command.help or "").split())
    return text.split(". ")[0].rstrip(".") if text else ""


def _params_table(command: Any, ctx: Any) -> list[str]:
    rows = []
    for param in command.params:
        record = param.get_help_record(ctx) if hasattr(param, "get_help_record") else None
        if record is None:
            if getattr(param, "hidden", False):
                continue
            record = (param.human_readable_name, "")
        names, help_text = record
        kind = "argument" if getattr(param, "param_type_name", "") == "argument" else "option"
        rows.append(f"| {_cell(f'`{names}`')} | {kind} | {_cell(_escape(help_text))} |")
    if not rows:
        return []
    return ["| name | kind | description |", "|---|---|---|", *rows, ""]


def cli_markdown(app: Any = None) -> str:
    """The CLI reference: an index of every command, then one section per command (usage, help, parameters)."""
    commands = cli_commands(app)
    out = ["| command | what it does |", "|---|---|"]
    for path, cmd, _ in commands[1:]:
        hidden = " (hidden: an old spelling)" if cmd.hidden else ""
        out.append(f"| [`{path}`](#{_slug(path)}) | {_cell(_escape(_short_help(cmd)))}{hidden} |")
    out.append("")
    for path, cmd, ctx in commands:
        depth = path.count(" ")
        level = "#" * min(2 + max(depth - 1, 0), 4)
        out += [f"{level} `{path}` {{#{_slug(path)}}}", ""]
        if cmd.hidden:
            out += ["Hidden from `--help`: an old spelling kept so existing scripts keep working.", ""]
        out += ["```text", cmd.get_usage(ctx), "```", ""]
        if cmd.help:
            out += [_prose(cmd.help), ""]
        if hasattr(cmd, "list_commands") and depth:  # the root's commands: the index above
            subs = [(n, cmd.get_command(ctx, n)) for n in cmd.list_commands(ctx)]
            out += ["| subcommand | what it does |", "|---|---|"]
            out += [f"| [`{path} {n}`](#{_slug(path, n)}) | {_cell(_escape(_short_help(s)))} |" for n, s in subs]
            out.append("")
        out += _params_table(cmd, ctx)
    return "\n".join(out)


# ------------------------------------------------------------------------------------------------------ HTTP
def openapi_schema() -> dict:
    """``kgrag serve``'s OpenAPI document: the app is built (every router included), nothing is served."""
    from kgrag.api.app import create_app

    return create_app().openapi()


def _ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def _model_link(name: str) -> str:
    return f"[`{name}`](#{_slug('model', name)})"


def _constraints(schema: dict) -> str:
    labels = {"minLength": "min length", "maxLength": "max length", "minimum": "≥", "maximum": "≤",
              "exclusiveMinimum": ">", "exclusiveMaximum": "<", "minItems": "min items", "maxItems": "max items",
              "pattern": "pattern"}
    found = [f"{label} `{schema[key]}`" if key == "pattern" else f"{label} {schema[key]}"
             for key, label in labels.items() if key in schema]
    return f" ({', '.join(found)})" if found else ""


def _type(schema: dict) -> str:
    """A JSON-schema type as short Markdown: model names link to their section; ``or`` instead of pipes."""
    if "$ref" in schema:
        return _model_link(_ref_name(schema["$ref"]))
    for key in ("anyOf", "oneOf"):
        if key in schema:
            options = [s for s in schema[key] if s.get("type") != "null"]
            text = " or ".join(_type(s) for s in options) or "null"
            return text + (" or null" if len(options) < len(schema[key]) else "")
    if "allOf" in schema and len(schema["allOf"]) == 1:
        return _type(schema["allOf"][0])
    if "const" in schema:
        return f"`{json.dumps(schema['const'], ensure_ascii=False)}`"
    if "enum" in schema:
        return "one of " + ", ".join(f"`{json.dumps(v, ensure_ascii=False)}`" for v in schema["enum"])
    kind = schema.get("type")
    if kind == "array":
        return f"array of {_type(schema.get('items', {}))}{_constraints(schema)}"
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return f"object of {_type(schema['additionalProperties'])}"
    if isinstance(kind, list):
        return " or ".join(kind)
    return f"{kind or 'any'}{_constraints(schema)}"


def _default(schema: dict) -> str:
    if "default" not in schema:
        return ""
    text = json.dumps(schema["default"], ensure_ascii=False)
    return f"`{text if len(text) <= 40 else text[:37] + '…'}`"


def _fields_table(schema: dict) -> list[str]:
    properties = schema.get("properties") or {}
    if not properties:
        return [f"Type: {_type(schema)}.", ""]
    required = set(schema.get("required") or [])
    rows = ["| field | type | required | default | description |", "|---|---|---|---|---|"]
    for name, prop in properties.items():
        rows.append(f"| `{name}` | {_cell(_type(prop))} | {'yes' if name in required else ''} | "
                    f"{_cell(_default(prop))} | {_cell(_escape(prop.get('description', '')))} |")
    return [*rows, ""]


def _body_model(operation: dict) -> tuple[str | None, dict | None]:
    """The request body's model name (or ``None`` for an inline schema) and its schema, or ``(None, None)``."""
    content = (operation.get("requestBody") or {}).get("content") or {}
    for media in content.values():
        schema = media.get("schema") or {}
        return (_ref_name(schema["$ref"]) if "$ref" in schema else None), schema
    return None, None


def http_routes(schema: dict) -> list[tuple[str, str, dict]]:
    """``(METHOD, path, operation)`` for every operation of the OpenAPI document, in the app's order."""
    return [(method.upper(), path, op) for path, item in schema.get("paths", {}).items()
            for method, op in item.items() if method in _METHODS]


def http_markdown(schema: dict | None = None) -> str:
    """The HTTP reference: an index of every route, one section per tag and route, then every model."""
    schema = schema if schema is not None else openapi_schema()
    models = schema.get("components", {}).get("schemas", {})
    routes = http_routes(schema)
    out = ["| method | path | what it does |", "|---|---|---|"]
    for method, path, op in routes:
        out.append(f"| {method} | [`{path}`](#{_slug(method, path)}) | {_cell(_escape(op.get('summary', '')))} |")
    out.append("")
    tags: dict[str, list[tuple[str, str, dict]]] = {}
    for method, path, op in routes:
        tags.setdefault((op.get("tags") or ["other"])[0], []).append((method, path, op))
    for tag, ops in tags.items():
        out += [f"## {tag}", ""]
        for method, path, op in ops:
            out += [f"### `{method} {path}` {{#{_slug(method, path)}}}", ""]
            out += [f"**{_escape(op.get('summary', ''))}.** {_prose(op.get('description'))}".rstrip(), ""]
            params = op.get("parameters") or []
            if params:
                out += ["| parameter | in | type | required | description |", "|---|---|---|---|---|"]
                out += [f"| `{p['name']}` | {p.get('in', '')} | {_cell(_type(p.get('schema', {})))} | "
                        f"{'yes' if p.get('required') else ''} | {_cell(_escape(p.get('description', '')))} |"
                        for p in params]
                out.append("")
            name, body = _body_model(op)
            if body is not None:
                out += [f"Request body: {_model_link(name) if name else 'JSON'}", ""]
                out += _fields_table(models.get(name, {}) if name else body)
            responses = []
            for status, response in (op.get("responses") or {}).items():
                media = next(iter((response.get("content") or {}).values()), {})
                target = media.get("schema") or {}
                shown = f" {_type(target)}" if target else ""
                responses.append(f"`{status}`{shown} {_escape(response.get('description', ''))}".strip())
            if responses:
                out += ["Responses: " + " · ".join(responses), ""]
    out += ["## Models", ""]
    for name in sorted(models):
        model = models[name]
        out += [f"### `{name}` {{#{_slug('model', name)}}}", ""]
        if model.get("description"):
            out += [_prose(model["description"]), ""]
        out += _fields_table(model)
    return "\n".join(out)


# ------------------------------------------------------------------------------------------------ mkdocs hook
def on_page_markdown(markdown: str, page: Any, config: Any, files: Any, **_: Any) -> str:
    """Replace the reference markers with the generated Markdown (other pages pass through unchanged)."""
    if CLI_MARKER in markdown:
        markdown = markdown.replace(CLI_MARKER, cli_markdown())
    if HTTP_MARKER in markdown:
        markdown = markdown.replace(HTTP_MARKER, http_markdown())
    return markdown


if __name__ == "__main__":
    which = sys.argv[1] if len(sys.argv) > 1 else "cli"
    print(cli_markdown() if which == "cli" else http_markdown())

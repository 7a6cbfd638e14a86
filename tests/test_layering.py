"""Imports point from the edge to the centre (docs/architecture.md, "never imports").

Read from the source with `ast`, so a lazy import inside a function counts as much as one at the
top of a module. Imports under `if TYPE_CHECKING:` are left out: they never run.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "metis_core"

NEVER_IMPORTS: dict[str, set[str]] = {
    "messages": {"models", "adapters", "transport", "events", "store", "trace", "routing", "agent", "cli",
                 "gateway", "server", "learning", "replay", "export", "structured", "cassettes", "prompts"},
    "transport": {"adapters", "messages", "events", "store", "trace", "routing", "agent", "cli", "gateway",
                  "server"},
    "models": {"adapters", "events", "store", "trace", "routing", "agent", "cli", "gateway", "server"},
    "structured": {"adapters", "events", "store", "trace", "routing", "agent", "cli", "gateway", "server"},
    "cassettes": {"adapters", "events", "store", "trace", "routing", "agent", "cli", "gateway", "server"},
    "adapters": {"events", "store", "trace", "routing", "agent", "cli", "gateway", "server", "learning",
                 "replay", "export"},
    "events": {"adapters", "store", "trace", "routing", "agent", "cli", "gateway", "server", "learning"},
    "store": {"adapters", "routing", "agent", "cli", "gateway", "server", "learning"},
    "trace": {"adapters", "routing", "agent", "cli", "gateway", "server", "learning"},
    "routing": {"store", "trace", "agent", "cli", "gateway", "server", "learning"},
    "prompts": {"adapters", "events", "agent", "cli", "gateway", "server"},
    "agent": {"cli", "gateway", "server", "learning", "replay"},
    "export": {"adapters", "agent", "cli", "gateway", "server"},
    "learning": {"cli", "gateway", "server"},
    "replay": {"cli", "gateway", "server"},
    "gateway": {"cli"},
    "users": {"adapters", "routing", "agent", "cli", "gateway", "server", "learning", "replay", "export"},
}
EDGES = {"cli", "gateway", "server", "testing"}
"""Nothing below imports an edge; an edge may import another edge only through the CLI's commands."""
MAY_IMPORT_EDGES = {"cli", "gateway", "server"}


def _runtime_imports(tree: ast.AST) -> Iterator[str]:
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            yield from (name for child in node.orelse for name in _runtime_imports(ast.Module([child], [])))
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module
        elif isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        yield from _runtime_imports(node)


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "metis_core" and len(parts) > 1 else None


def _imports_by_layer() -> dict[str, set[tuple[str, str]]]:
    found: dict[str, set[tuple[str, str]]] = {}
    for path in PACKAGE.rglob("*.py"):
        relative = path.relative_to(PACKAGE.parent).with_suffix("")
        layer = _layer(".".join(relative.parts))
        if layer is None:
            continue
        for module in _runtime_imports(ast.parse(path.read_text(encoding="utf-8"))):
            target = _layer(module)
            if target is not None and target != layer:
                found.setdefault(layer, set()).add((target, str(path.relative_to(PACKAGE.parent))))
    return found


IMPORTS = _imports_by_layer()


@pytest.mark.parametrize("layer", sorted(NEVER_IMPORTS))
def test_a_layer_never_imports_what_sits_above_it(layer: str) -> None:
    wrong = sorted((target, where) for target, where in IMPORTS.get(layer, set()) if target in NEVER_IMPORTS[layer])
    assert not wrong, f"{layer}/ imports layers above it: {wrong}"


def test_only_the_edges_import_an_edge() -> None:
    wrong = sorted(
        (layer, target, where)
        for layer, targets in IMPORTS.items()
        for target, where in targets
        if target in EDGES and layer not in MAY_IMPORT_EDGES
    )
    assert not wrong, f"an inner layer imports an edge (cli, gateway, server, testing): {wrong}"


def test_the_rules_know_every_layer_that_exists() -> None:
    layers = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
    assert layers - set(NEVER_IMPORTS) - EDGES <= {"data"}, "a new package needs its line in NEVER_IMPORTS"

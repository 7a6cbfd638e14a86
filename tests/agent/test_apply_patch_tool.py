"""The apply_patch tool and its V4A diff: hunks with context and anchors, whitespace-loosened context,
CRLF files, end-of-file hunks, deletes; confinement and a diff that does not apply leave files as they were."""

from __future__ import annotations

from pathlib import Path

import pytest

from metis_core.agent.tools.base import ToolContext
from metis_core.agent.tools.patch import ApplyPatch
from metis_core.agent.tools.registry import ToolRegistry
from metis_core.agent.tools.v4a_diff import PatchFormatError, apply_create, apply_update
from metis_core.errors import ToolError

SOURCE = "def greet(name):\n    return 'hi ' + name\n\n\ndef main():\n    print(greet('x'))\n    return 0\n"


def test_an_update_hunk_replaces_its_lines_and_keeps_the_rest() -> None:
    diff = "@@ def main():\n-    print(greet('x'))\n+    print(greet('world'))\n     return 0\n"
    assert apply_update(SOURCE, diff) == SOURCE.replace("greet('x')", "greet('world')")


def test_context_matches_with_loosened_whitespace_and_keeps_the_files_own_spelling() -> None:
    diff = " def greet(name):  \n-    return 'hi ' + name\n+    return 'hello ' + name\n"
    assert apply_update(SOURCE, diff) == SOURCE.replace("'hi '", "'hello '")


def test_an_end_of_file_hunk_appends_after_the_last_line_and_crlf_is_kept() -> None:
    text = "a\r\nb\r\n"
    assert apply_update(text, "@@\n b\n+c\n*** End of File\n") == "a\r\nb\r\nc\r\n"


def test_a_hunk_whose_context_is_absent_is_a_named_error() -> None:
    with pytest.raises(PatchFormatError, match="not in the file"):
        apply_update(SOURCE, " def nothing():\n-    pass\n")
    with pytest.raises(PatchFormatError, match="starts with"):
        apply_update(SOURCE, "?junk\n")


def test_a_create_diff_is_its_plus_lines() -> None:
    assert apply_create("+one\n+\n+two\n") == "one\n\ntwo"
    with pytest.raises(PatchFormatError):
        apply_create("+one\nplain\n")


@pytest.fixture
def context(tmp_path: Path) -> ToolContext:
    (tmp_path / "app.py").write_text(SOURCE)
    return ToolContext(workspace=tmp_path)


async def test_the_tool_updates_and_deletes_inside_the_workspace(context: ToolContext) -> None:
    tool = ApplyPatch()
    updated = await tool.run({"operation": "update_file", "path": "app.py",
                              "diff": "-    return 0\n+    return 1\n"}, context)
    assert not updated.is_error and updated.files_modified == ["app.py"]
    assert (context.workspace / "app.py").read_text().endswith("    return 1\n")
    deleted = await tool.run({"operation": "delete_file", "path": "app.py"}, context)
    assert deleted.content == "deleted app.py" and not (context.workspace / "app.py").exists()


async def test_the_tool_refuses_escapes_and_writes_nothing_for_a_diff_that_does_not_apply(
        context: ToolContext) -> None:
    tool = ApplyPatch()
    escape = await tool.run({"operation": "create_file", "path": "../outside.txt", "diff": "+x\n"}, context)
    assert escape.error_class == "permission_denied"
    assert not (context.workspace.parent / "outside.txt").exists()
    bad = await tool.run({"operation": "update_file", "path": "app.py", "diff": " no such line\n+x\n"}, context)
    assert bad.error_class == "validation_error" and (context.workspace / "app.py").read_text() == SOURCE
    again = await tool.run({"operation": "create_file", "path": "app.py", "diff": "+x\n"}, context)
    assert again.is_error and (context.workspace / "app.py").read_text() == SOURCE


def test_apply_patch_runs_when_called_but_is_never_offered_as_a_function_tool() -> None:
    registry = ToolRegistry.with_builtins()
    assert "apply_patch" not in registry.names() and registry.get("apply_patch") is None
    tool = registry.for_call("apply_patch")
    assert tool is not None and tool.definition.needs_confirmation


def test_a_provider_called_tool_cannot_shadow_a_function_tool_of_the_same_name() -> None:
    registry = ToolRegistry.with_builtins()
    with pytest.raises(ToolError, match="already registered as a function tool"):
        registry.register_provider_called(registry.get("run_command"))  # type: ignore[arg-type]
    assert registry.extended([]).for_call("apply_patch") is not None

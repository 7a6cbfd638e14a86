"""The docs stay a reference: no development-process numbering anywhere in the tree's code or docs,
docs/gateway.md short enough to read, and every doc the architecture map links to present.

Measurement history belongs in bench/results/ and the git log; these rules keep it from creeping back.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"

GATEWAY_DOC_MAX_LINES = 400

PROCESS_NUMBERING = re.compile(r"\b(?:stop|session|issue|wave)s?[ -]#?\d+\b", re.IGNORECASE)
"""A development stop, session, issue or wave named by its number: the word, a space or hyphen, digits."""

SCANNED_SUFFIXES = frozenset({".py", ".md", ".js", ".html", ".css", ".toml", ".cfg", ".txt", ".sh", ".yml", ".yaml",
                              ".sql"})
SCANNED_NAMES = frozenset({"Makefile", "run"})
SCANNED_ROOTS = ("metis_core", "bench", "docs", "tests", ".ci")
TOP_LEVEL_FILES = ("README.md", "Makefile", "pyproject.toml", "setup.py")
SKIPPED = (
    ROOT / "tests" / "data",  # copies of the shared specs and recorded traffic, kept as received
)


def scanned_files() -> list[Path]:
    """The tree's own code and docs: every source, doc and config file under the package, bench, docs,
    tests and CI, without virtualenvs, build output, caches, recorded data or benchmark result data."""
    files = [ROOT / name for name in TOP_LEVEL_FILES if (ROOT / name).is_file()]
    for root in SCANNED_ROOTS:
        for folder, subfolders, names in os.walk(ROOT / root):
            here = Path(folder)
            subfolders[:] = sorted(  # pruned in place: .venv, bench/.venv-lean, caches are never entered
                name for name in subfolders
                if not (name.startswith(".") or name in ("__pycache__", "node_modules") or name.endswith(".egg-info")
                        or here / name in SKIPPED)
            )
            files.extend(here / name for name in sorted(names)
                         if Path(name).suffix in SCANNED_SUFFIXES or name in SCANNED_NAMES)
    return files


def numbering_in(text: str) -> list[str]:
    return [match.group(0) for match in PROCESS_NUMBERING.finditer(text)]


def test_the_numbering_pattern_finds_process_numbers_and_leaves_other_numbers() -> None:
    hits = ["Stop " + "35", "stop-" + "34", "issue " + "24", "sessions " + "3", "Wave " + "10"]
    assert numbering_in(f"fixed in {hits[0]}, see {hits[1]} and {hits[2]}; {hits[3]}; {hits[4]}") == hits
    assert numbering_in("migration step 7; 20 sessions; stop_reason 2; a session_id 12; rounds 2 and 4") == []


def test_no_code_or_doc_names_a_development_stop_session_issue_or_wave_by_number() -> None:
    files = scanned_files()
    assert ROOT / "docs" / "gateway.md" in files and Path(__file__) in files  # the walk reaches the tree
    found = []
    for path in files:
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            for hit in numbering_in(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {hit!r}")
    assert not found, (
        "development-process numbering in code or docs (say what the rule or figure is; measurement "
        "history goes to bench/results/ and commit messages):\n" + "\n".join(found)
    )


def test_the_gateway_doc_is_a_reference_of_at_most_400_lines() -> None:
    lines = (DOCS / "gateway.md").read_text(encoding="utf-8").count("\n")
    assert lines <= GATEWAY_DOC_MAX_LINES, (
        f"docs/gateway.md has {lines} lines (at most {GATEWAY_DOC_MAX_LINES}): keep it user reference and "
        "move measurement history to bench/results/gateway-history.md"
    )


def linked_docs(text: str) -> set[str]:
    """Every docs/... markdown path named in `text` (with or without backticks)."""
    return set(re.findall(r"docs/[\w./-]+?\.md", text))


def test_every_doc_the_architecture_map_names_exists() -> None:
    names = linked_docs((DOCS / "architecture.md").read_text(encoding="utf-8"))
    assert "docs/gateway.md" in names and "docs/performance.md" in names
    missing = sorted(name for name in names if not (ROOT / name).is_file())
    assert not missing, f"docs/architecture.md names docs that do not exist: {missing}"


def test_every_doc_is_reachable_from_the_architecture_map() -> None:
    names = linked_docs((DOCS / "architecture.md").read_text(encoding="utf-8"))
    pages = {f"docs/{path.relative_to(DOCS).as_posix()}" for path in DOCS.rglob("*.md")} - {"docs/architecture.md"}
    adapters = {page for page in pages if page.startswith("docs/adapters/")}
    if "docs/adapters/*.md" in (DOCS / "architecture.md").read_text(encoding="utf-8"):
        pages -= adapters  # named together as docs/adapters/*.md
    unlinked = sorted(pages - names)
    assert not unlinked, f"docs/architecture.md does not name: {unlinked}"

"""Skill discovery: SKILL.md folders in the global and the workspace skill directories.

A skill is `<dir>/<name>/SKILL.md`: YAML front matter (`name`, `description`, `version`, optional
`always: true`) between `---` lines, then the instructions. Global skills live in
`$METIS_HOME/skills`, workspace skills in `<workspace>/.metis/skills`; a workspace skill shadows a
global one of the same name. Every skill is scanned (scan.py) when discovered. A folder whose
SKILL.md cannot be read is reported in `problems`, never loaded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from metis_core.adapters._common.chars_per_token import CHARS_PER_TOKEN
from metis_core.agent.skills.scan import ScanResult, scan_skill
from metis_core.errors import SkillFormatError
from metis_core.hashing import sha256_hex
from metis_core.yaml_text import safe_load

SKILL_FILE = "SKILL.md"
WORKSPACE_SKILLS = Path(".metis") / "skills"
_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
SkillSource = Literal["global", "workspace"]


def text_tokens(text: str) -> int:
    return max(1, len(text) // CHARS_PER_TOKEN)


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    version: str
    always: bool
    body: str
    path: Path
    source: SkillSource
    scan: ScanResult
    content_hash: str

    @property
    def tokens(self) -> int:
        return text_tokens(self.body)

    @property
    def blocked(self) -> bool:
        return self.scan.verdict == "blocked"

    @property
    def semantic_version(self) -> str | None:
        """The version as a semantic version ("3" -> "3.0.0", "1.2" -> "1.2.0"), None if it is not numeric."""
        parts = self.version.strip().lstrip("v").split(".")
        if not 1 <= len(parts) <= 3 or not all(p.isdigit() for p in parts):
            return None
        return ".".join([*parts, *["0"] * (3 - len(parts))])


def parse_skill(path: Path, source: SkillSource) -> Skill:
    """Read one SKILL.md; SkillFormatError says what is missing."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise SkillFormatError(f"{path}: cannot be read ({error})") from None
    match = re.match(r"\A---[ \t]*\n(.*?)\n---[ \t]*\n?(.*)\Z", text, re.S)
    if match is None:
        raise SkillFormatError(f"{path}: must start with front matter between '---' lines "
                               "(name, description, version)")
    try:
        meta = safe_load(match.group(1))
    except Exception:  # the YAML reader's own errors vary; the message must not echo the text
        raise SkillFormatError(f"{path}: the front matter is not valid YAML") from None
    if not isinstance(meta, dict):
        raise SkillFormatError(f"{path}: the front matter must be a mapping")
    name, description, version = meta.get("name"), meta.get("description"), meta.get("version", "1")
    if not isinstance(name, str) or not _NAME.match(name):
        raise SkillFormatError(f"{path}: name must be lower-case letters, digits, '-' or '_' (at most 64)")
    if not isinstance(description, str) or not description.strip():
        raise SkillFormatError(f"{path}: description is required (one line saying when to use the skill)")
    body = match.group(2).strip()
    if not body:
        raise SkillFormatError(f"{path}: the instructions after the front matter are empty")
    return Skill(name=name, description=" ".join(description.split()), version=str(version),
                 always=meta.get("always") is True, body=body, path=path, source=source, scan=scan_skill(text),
                 content_hash=sha256_hex(text))


@dataclass
class SkillCatalog:
    skills: dict[str, Skill] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @classmethod
    def discover(cls, home: Path, workspace: Path | None) -> SkillCatalog:
        catalog = cls()
        roots: list[tuple[Path, SkillSource]] = [(home / "skills", "global")]
        if workspace is not None:
            roots.append((workspace / WORKSPACE_SKILLS, "workspace"))
        for root, source in roots:  # workspace last: it shadows a global skill of the same name
            if not root.is_dir():
                continue
            for folder in sorted(p for p in root.iterdir() if (p / SKILL_FILE).is_file()):
                try:
                    skill = parse_skill(folder / SKILL_FILE, source)
                except SkillFormatError as error:
                    catalog.problems.append(str(error))
                    continue
                catalog.skills[skill.name] = skill
        return catalog

    def loadable(self) -> list[Skill]:
        return [s for s in self.skills.values() if not s.blocked]

    def search(self, query: str, limit: int = 10) -> list[Skill]:
        """Skills whose name, description or body mention the query's words, best first."""
        words = [w for w in re.findall(r"\w+", query.lower()) if len(w) > 1]
        scored: list[tuple[float, str, Skill]] = []
        for skill in self.loadable():
            name, description, body = skill.name.lower(), skill.description.lower(), skill.body.lower()
            score = sum(3.0 * (w in name) + 2.0 * (w in description) + 1.0 * (w in body) for w in words)
            if score:
                scored.append((-score, skill.name, skill))
        return [skill for _, _, skill in sorted(scored)[:limit]]

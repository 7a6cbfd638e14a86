"""Rubrics: versioned YAML files saying how a subject is judged (evaluator docs/learning.md).

The defaults ship in metis_core/learning/rubrics/; a file in $METIS_HOME/rubrics/ with the same
`id` replaces the shipped one. Every verdict records the rubric id and version it was judged
by, so changing a rubric means raising its version, never editing the meaning of an old one.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from metis_core.errors import RubricInvalidError
from metis_core.yaml_text import safe_load

SubjectKind = Literal["turn", "tool_cycle", "session", "workload"]
JudgeKind = Literal["heuristic", "llm", "hybrid"]
SHIPPED_DIR = Path(__file__).resolve().parent.parent / "rubrics"


class Criterion(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    description: str = Field(min_length=1)
    weight: float = Field(default=1.0, gt=0)


class Rubric(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]*$")
    version: str = Field(min_length=1)
    subject: SubjectKind
    judge: JudgeKind = "heuristic"
    description: str = ""
    criteria: list[Criterion] = Field(min_length=1)


def load_rubric(path: Path) -> Rubric:
    """One rubric file; RubricInvalidError naming the file and what is wrong with it."""
    try:
        data = safe_load(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise RubricInvalidError(f"cannot read rubric {path}: {error.strerror}") from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise RubricInvalidError(f"rubric {path} is not valid YAML{where}; fix or remove it") from None
    try:
        return Rubric.model_validate(data)
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'file'}: {e['msg']}" for e in error.errors())
        raise RubricInvalidError(f"rubric {path} is invalid ({problems}); fix or remove it") from None


@dataclass
class RubricBook:
    """The rubrics in force: shipped defaults, replaced by the user's files of the same id."""

    user_dir: Path | None = None
    shipped_dir: Path = SHIPPED_DIR

    def default_id(self, subject: SubjectKind) -> str:
        return f"{subject}-default"

    def get(self, rubric_id: str) -> Rubric:
        """The rubric with this id (the user's file first); RubricInvalidError if missing or bad."""
        for folder in (self.user_dir, self.shipped_dir):
            if folder is None:
                continue
            path = folder / f"{rubric_id}.yaml"
            if path.is_file():
                rubric = load_rubric(path)
                if rubric.id != rubric_id:
                    raise RubricInvalidError(f"rubric {path} declares id {rubric.id!r}; the file name says "
                                             f"{rubric_id!r}, make them agree")
                return rubric
        raise RubricInvalidError(f"no rubric {rubric_id!r} (looked in {self.user_dir} and the shipped set)")

    def for_subject(self, subject: SubjectKind) -> Rubric:
        rubric = self.get(self.default_id(subject))
        if rubric.subject != subject:
            raise RubricInvalidError(f"rubric {rubric.id!r} judges {rubric.subject} subjects, not {subject}")
        return rubric

    def all(self) -> list[Rubric]:
        ids = sorted({p.stem for d in (self.shipped_dir, self.user_dir) if d is not None and d.is_dir()
                      for p in d.glob("*.yaml")})
        return [self.get(i) for i in ids]

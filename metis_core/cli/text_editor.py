"""Editing text in the user's editor ($VISUAL, then $EDITOR, then vi): templates, chat `!edit`."""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from pathlib import Path

from metis_core.cli.exit_codes import UsageProblem


def edit_text(text: str, *, suffix: str = ".md") -> str:
    """`text` after the user's editor has had it; UsageProblem when the editor fails or is missing."""
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    with tempfile.TemporaryDirectory(prefix="metis-edit-") as scratch:
        file = Path(scratch) / f"metis{suffix}"
        file.write_text(text, encoding="utf-8")
        try:
            done = subprocess.run([*shlex.split(editor), str(file)], check=False)
        except OSError as error:
            raise UsageProblem(f"cannot start the editor {editor!r} ({error.strerror}); set EDITOR") from None
        if done.returncode != 0:
            raise UsageProblem(f"the editor {editor!r} exited with {done.returncode}; nothing was used")
        return file.read_text(encoding="utf-8")

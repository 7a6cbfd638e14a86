"""YAML reading for our data and config files, through libyaml when PyYAML was built with it.

`yaml.safe_load` always runs PyYAML's pure-Python parser: ~50 ms for the built-in model registry
and price table, paid by every process on its first call. `CSafeLoader` runs the same safe
constructors over libyaml's C parser (shipped in PyYAML's wheels) in a tenth of the time; where
libyaml is missing, the Python SafeLoader gives the same data. Errors are `yaml.YAMLError` either way.
PyYAML itself (~15-40 ms to import) is imported on the first parse, not with this module: a
process that reads the bundled data from its prepared form (prepared_data.py) and has no
config.yaml never imports it.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from metis_core.errors import ConfigError

if TYPE_CHECKING:
    import yaml


@cache
def safe_loader() -> type[yaml.SafeLoader]:
    """libyaml's CSafeLoader where PyYAML has it, else the pure-Python SafeLoader."""
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def safe_load(text: str) -> Any:
    """`yaml.safe_load`, with libyaml's parser where available."""
    import yaml

    return yaml.load(text, Loader=safe_loader())


def read_yaml_file(path: Path, error: type[ConfigError], what: str) -> Any:
    """A YAML file's data; an unreadable or malformed file raises `error` naming the file and position.

    Only the position and the parser's complaint are reported, never the text around them: a
    config file may hold an API key.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise error(f"cannot read {what} {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        line = path.read_bytes()[: exc.start].count(b"\n") + 1
        raise error(f"{path} is not UTF-8 text (byte {exc.object[exc.start]:#x} on line {line}); "
                    "save it as UTF-8 and retry") from None
    return parse_yaml_text(text, path, error)


def parse_yaml_text(text: str, path: Path, error: type[ConfigError]) -> Any:
    """`text` (read from `path`) as YAML data; `error` naming the file and position when it is not."""
    import yaml

    try:
        return safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise error(f"{path}: invalid YAML{where}: {exc.problem or exc.context}; fix it and retry") from None
    except yaml.YAMLError:
        raise error(f"{path}: invalid YAML; fix it and retry") from None

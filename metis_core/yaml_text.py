"""YAML reading for our data and config files, through libyaml when PyYAML was built with it.

`yaml.safe_load` always runs PyYAML's pure-Python parser: ~50 ms for the built-in model registry
and price table, paid by every process on its first call. `CSafeLoader` runs the same safe
constructors over libyaml's C parser (shipped in PyYAML's wheels) in a tenth of the time; where
libyaml is missing, the Python SafeLoader gives the same data. Errors are `yaml.YAMLError` either way.
"""

from __future__ import annotations

from typing import Any

import yaml

SafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def safe_load(text: str) -> Any:
    """`yaml.safe_load`, with libyaml's parser where available."""
    return yaml.load(text, Loader=SafeLoader)

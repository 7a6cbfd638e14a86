"""Immutable slotted values: what a frozen dataclass gives, without its cost at import.

`@dataclass` writes and compiles each class's methods when its module is imported (~0.3-0.5 ms a
class), which every process pays before its first call. The records that path builds (prices,
registry entries) derive from `PlainValue` instead: fields are the classes' `__slots__`, set once
through `_assign`; equality, hashing and repr go by those fields, and setting one afterwards raises.
"""

from __future__ import annotations

from typing import Any


class PlainValue:
    __slots__ = ()

    @classmethod
    def _field_names(cls) -> tuple[str, ...]:
        return tuple(name for klass in reversed(cls.__mro__) for name in getattr(klass, "__slots__", ()))

    def _assign(self, **values: Any) -> None:
        for name, value in values.items():
            object.__setattr__(self, name, value)

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self._field_names())

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable; cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable; cannot delete {name!r}")

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._field_names())
        return f"{type(self).__name__}({fields})"

"""Normalization: any JSON Schema brought into the portable subset (§5.4) wherever its meaning survives.

`normalize_schema` inlines non-recursive `$ref`s, merges `allOf`, reads `oneOf` as `anyOf`, turns
`const`, numeric enums, `nullable` and type lists into subset forms, and moves hints the subset
lacks (`default`, `examples`, unknown formats) into the description. Every change is reported; the
ones that change which inputs are valid are marked lossy. What cannot be carried (recursion,
`patternProperties`, conditionals ...) raises ToolSchemaError with its path. It does not check the
result against the subset (tool_schema.py does) and knows no provider.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from metis_core.errors import ToolSchemaError
from metis_core.messages.schema_changes import (
    NormalizedSchema,
    SchemaChange,
    forget_logged_changes,
    log_lossy_changes,
)
from metis_core.messages.schema_merge import SchemaMergeConflict, merge_all_of
from metis_core.messages.tool_schema import KEYWORDS_BY_TYPE, child_path

__all__ = ["NormalizedSchema", "SchemaChange", "forget_logged_changes", "log_lossy_changes", "normalize_schema"]

# Constructs with no faithful portable form: refused, with what to do instead.
REFUSED_WHY: dict[str, str] = {
    "not": "not has no portable equivalent; validate in the tool instead",
    "if": "conditional schemas are not portable; validate in the tool instead",
    "then": "conditional schemas are not portable; validate in the tool instead",
    "else": "conditional schemas are not portable; validate in the tool instead",
    "patternProperties": "declare each property under properties",
    "propertyNames": "property-name rules are not portable; validate in the tool instead",
    "dependentSchemas": "validate the dependency in the tool instead",
    "dependentRequired": "validate the dependency in the tool instead",
    "dependencies": "validate the dependency in the tool instead",
    "contains": "contains is not portable; validate in the tool instead",
    "$dynamicRef": "dynamic references are not portable; inline the definition",
    "$recursiveRef": "recursive references are not portable",
    "unevaluatedItems": "unevaluatedItems is not portable; give the array one items schema",
}
# Annotations that carry no constraint: dropped without a note.
_DROPPED_ANNOTATIONS = frozenset({"title", "$schema", "$id", "$anchor", "$comment", "discriminator", "$vocabulary"})
# Hints the subset lacks, said in the description instead: keyword -> the note's label.
_NOTED_HINTS = {"default": "Default", "examples": "Examples", "example": "Example", "deprecated": "Deprecated",
                "readOnly": "Read-only", "writeOnly": "Write-only", "contentEncoding": "Encoding",
                "contentMediaType": "Media type"}
_STRUCTURAL = frozenset({"type", "anyOf", "oneOf", "allOf", "$ref", "enum", "const", "nullable", "description",
                         "$defs", "definitions"})
_KNOWN = (frozenset().union(*KEYWORDS_BY_TYPE.values()) | _STRUCTURAL | _DROPPED_ANNOTATIONS | set(_NOTED_HINTS)
          | set(REFUSED_WHY) | {"exclusiveMinimum", "exclusiveMaximum", "multipleOf", "uniqueItems", "prefixItems",
                                "minProperties", "maxProperties", "unevaluatedProperties", "minContains",
                                "maxContains"})
_INFERRED_TYPE = (
    ("object", ("properties", "required", "additionalProperties")),
    ("array", ("items", "prefixItems", "minItems", "maxItems")),
    ("string", ("minLength", "maxLength", "pattern", "format")),
    ("number", ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")),
)


def normalize_schema(schema: Any, *, name: str = "schema", top_level_object: bool = True) -> NormalizedSchema:
    """Bring `schema` into the portable subset, or raise ToolSchemaError naming what cannot be carried.

    `name` is the tool (or output format) the schema belongs to, for messages. The input is not
    modified. With `top_level_object` (tools), a typeless or nullable root is read as an object."""
    if not isinstance(schema, Mapping):
        raise ToolSchemaError(name, "input_schema", "$", "must be a JSON object")
    normalizer = _Normalizer(name, schema)
    root = dict(schema)
    if top_level_object:
        root = normalizer.object_root(root)
    result = normalizer.node(root, "$")
    return NormalizedSchema(result, tuple(normalizer.changes))


def _shown(value: Any) -> str:
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return repr(value)


class _Normalizer:
    def __init__(self, name: str, root: Mapping[str, Any]) -> None:
        self.name = name
        self.root = root
        self.changes: list[SchemaChange] = []
        self.expanding: list[str] = []

    def refuse(self, construct: str, path: str, why: str) -> ToolSchemaError:
        return ToolSchemaError(self.name, construct, path, why)

    def change(self, path: str, keyword: str, action: str, *, lossy: bool = False) -> None:
        self.changes.append(SchemaChange(path, keyword, action, lossy))

    def object_root(self, root: dict[str, Any]) -> dict[str, Any]:
        kind = root.get("type")
        if kind is None and "$ref" not in root and not any(k in root for k in ("anyOf", "oneOf", "allOf")):
            root["type"] = "object"
            self.change("$", "type", 'added "object": a tool input is always an object')
        elif isinstance(kind, list) and "object" in kind and set(kind) <= {"object", "null"}:
            root["type"] = "object"
            self.change("$.type", "type", "removed null: a tool input is always an object")
        return root

    # --- the walk ------------------------------------------------------------------------------

    def node(self, schema: Any, path: str) -> dict[str, Any]:
        if schema is True or schema == {}:
            raise self.refuse("schema", path, "a schema that accepts any value is not portable; give it a type")
        if schema is False:
            raise self.refuse("schema", path, "a schema that accepts nothing is not portable")
        if not isinstance(schema, Mapping):
            raise self.refuse("schema", path, f"a schema must be a JSON object, got {type(schema).__name__}")
        s = dict(schema)
        for key in ("$defs", "definitions"):
            if key in s:
                del s[key]
                if path != "$":
                    self.change(child_path(path, key), key, "dropped; references to it were inlined")
        s = self.resolve_ref(s, path)
        for key in s:
            if key in REFUSED_WHY:
                raise self.refuse(key, child_path(path, key), REFUSED_WHY[key])
        notes = self.annotations(s, path)
        if "allOf" in s:
            s = self.merge(s, path)
            return self.finish(self.node(s, path), notes)
        if "oneOf" in s:
            s = self.one_of(s, path)
        if "anyOf" in s:
            return self.finish(self.any_of(s, path), notes)
        if "const" in s or "enum" in s:
            return self.finish(self.enum(s, path), notes)
        types = self.types(s, path)
        if len(types - {"null"}) > 1:
            return self.finish(self.split_types(s, path, types), notes)
        kind = next(iter(types - {"null"}), "null")
        s["type"] = [kind, "null"] if "null" in types and kind != "null" else kind
        out = self.typed(s, path, kind, notes)
        return self.finish(out, notes)

    def finish(self, out: dict[str, Any], notes: list[str]) -> dict[str, Any]:
        if notes:
            text = " ".join(notes)
            current = out.get("description")
            if current and not current.rstrip().endswith((".", "!", "?", ":")):
                current = current.rstrip() + "."
            out["description"] = f"{current} {text}" if current else text
        return out

    def resolve_ref(self, s: dict[str, Any], path: str) -> dict[str, Any]:
        if "$ref" not in s:
            return s
        ref = s.pop("$ref")
        ref_path = child_path(path, "$ref")
        if not isinstance(ref, str) or not ref.startswith("#"):
            raise self.refuse("$ref", ref_path,
                              f"only references inside the schema (#/...) can be inlined, not {ref!r}")
        if ref in self.expanding:
            raise self.refuse("$ref", ref_path, f"{ref} refers to itself (a recursive schema has no portable form)")
        target: Any = self.root
        for part in ref[1:].split("/")[1:]:
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(target, Mapping) and part in target:
                target = target[part]
            elif isinstance(target, list) and part.isdigit() and int(part) < len(target):
                target = target[int(part)]
            else:
                raise self.refuse("$ref", ref_path, f"{ref} does not point at a definition in this schema")
        if not isinstance(target, Mapping):
            raise self.refuse("$ref", ref_path, f"{ref} does not point at a schema")
        self.change(ref_path, "$ref", f"inlined {ref}")
        self.expanding.append(ref)
        try:
            resolved = self.resolve_ref(orjson.loads(orjson.dumps(target)), path)
        finally:
            self.expanding.pop()
        # The definition's own nested references must be expanded while `ref` is still on the stack.
        resolved = dict(self.expand_nested(resolved, ref, path))
        siblings = {k: v for k, v in s.items() if k not in ("$defs", "definitions")}
        if not siblings:
            return resolved
        if set(siblings) <= {"description", "title", *_NOTED_HINTS}:
            return {**resolved, **siblings}
        return {"allOf": [resolved, siblings]}

    def expand_nested(self, schema: Any, ref: str, path: str) -> Any:
        """Replace every nested `$ref` in an inlined definition, detecting cycles through `ref`."""
        if isinstance(schema, list):
            return [self.expand_nested(item, ref, f"{path}[{i}]") for i, item in enumerate(schema)]
        if not isinstance(schema, Mapping):
            return schema
        out: dict[str, Any] = {}
        for key, value in schema.items():
            key_path = child_path(path, key)
            if key in ("properties", "dependentSchemas", "patternProperties") and isinstance(
                value, Mapping
            ):
                out[key] = {k: self.expand_nested(v, ref, child_path(key_path, str(k))) for k, v in value.items()}
            elif key in ("enum", "const", "default", "examples", "example", "required", "$defs", "definitions"):
                out[key] = value
            else:
                out[key] = self.expand_nested(value, ref, key_path)
        if "$ref" in out:
            self.expanding.append(ref)
            try:
                return self.resolve_ref(out, path)
            finally:
                self.expanding.pop()
        return out

    def annotations(self, s: dict[str, Any], path: str) -> list[str]:
        """Drop pure annotations, turn hints into description notes; return the notes."""
        notes: list[str] = []
        for key in list(s):
            if key in _STRUCTURAL or (key in _KNOWN and key not in _DROPPED_ANNOTATIONS and key not in _NOTED_HINTS):
                continue
            key_path = child_path(path, key)
            if key in _DROPPED_ANNOTATIONS:
                del s[key]
                if key == "title":
                    continue  # pydantic writes one per field, derived from its name: nothing is lost
                self.change(key_path, key, "dropped (an annotation no provider needs)")
            elif key in _NOTED_HINTS:
                value = s.pop(key)
                if key == "deprecated" and value is not True:
                    continue
                label = _NOTED_HINTS[key]
                notes.append(f"{label}." if key == "deprecated" else f"{label}: {_shown(value)}.")
                self.change(key_path, key, "moved into the description")
            elif key.startswith("x-") or key not in _KNOWN:
                del s[key]
                self.change(key_path, key, "dropped (an unknown keyword constrains nothing)")
        if "description" in s and not isinstance(s["description"], str):
            raise self.refuse("description", child_path(path, "description"), "must be a string")
        return notes

    def merge(self, s: dict[str, Any], path: str) -> dict[str, Any]:
        branches = s.pop("allOf")
        all_path = child_path(path, "allOf")
        if not isinstance(branches, list) or not branches:
            raise self.refuse("allOf", all_path, "must be a non-empty list of schemas")
        resolved = []
        for index, branch in enumerate(branches):
            if not isinstance(branch, Mapping):
                raise self.refuse("allOf", f"{all_path}[{index}]", "a schema must be a JSON object")
            resolved.append(self.resolve_ref(dict(branch), f"{all_path}[{index}]"))
        try:
            merged, widened = merge_all_of([s, *resolved])
        except SchemaMergeConflict as conflict:
            raise self.refuse("allOf", all_path, f"the branches cannot be merged: {conflict}") from None
        self.change(all_path, "allOf", "merged the branches into one schema", lossy=widened)
        return merged

    def one_of(self, s: dict[str, Any], path: str) -> dict[str, Any]:
        if "anyOf" in s:
            raise self.refuse("oneOf", child_path(path, "oneOf"), "oneOf beside anyOf is not portable")
        branches = s.pop("oneOf")
        s["anyOf"] = branches
        disjoint = isinstance(branches, list) and self.disjoint(branches)
        self.change(child_path(path, "oneOf"), "oneOf", "read as anyOf" + (
            "" if disjoint else ": an input matching several branches is now accepted"), lossy=not disjoint)
        return s

    def disjoint(self, branches: list[Any]) -> bool:
        """Whether no input can match two branches: distinct types, or distinct constant tags."""
        resolved = [self.resolve_ref(dict(b), "$") if isinstance(b, Mapping) else b for b in branches]
        kinds: list[set[str]] = []
        for branch in resolved:
            if not isinstance(branch, Mapping) or "type" not in branch:
                break
            kind = branch["type"]
            names = set(kind) if isinstance(kind, list) else {kind}
            kinds.append(names | ({"number"} if "integer" in names else set()) | (
                {"integer"} if "number" in names else set()))
        else:
            if all(not (a & b) for i, a in enumerate(kinds) for b in kinds[i + 1:]):
                return True
        return _tagged(resolved)

    def any_of(self, s: dict[str, Any], path: str) -> dict[str, Any]:
        branches = s.pop("anyOf")
        any_path = child_path(path, "anyOf")
        if not isinstance(branches, list) or not branches:
            raise self.refuse("anyOf", any_path, "must be a non-empty list of schemas")
        description = s.pop("description", None)
        if s:  # A and (B1 or B2) == (A and B1) or (A and B2)
            self.change(any_path, "anyOf", f"moved {', '.join(sorted(s))} into each branch")
            branches = [{"allOf": [dict(s), b]} for b in branches]
        out: list[dict[str, Any]] = []
        for index, branch in enumerate(branches):
            normalized = self.node(branch, f"{any_path}[{index}]")
            parts = normalized["anyOf"] if set(normalized) <= {"anyOf", "description"} and "anyOf" in normalized else [
                normalized]
            for part in parts:
                if part not in out:
                    out.append(part)
        result = self.collapse(out, any_path)
        if description is not None:
            result["description"] = description
        return result

    def collapse(self, branches: list[dict[str, Any]], path: str, *, report: bool = True) -> dict[str, Any]:
        """One branch stands alone; one branch plus null becomes that branch made nullable."""
        nulls = [b for b in branches if b.get("type") == "null" and set(b) <= {"type", "description"}]
        others = [b for b in branches if b not in nulls]
        if len(others) == 1 and not nulls:
            return dict(others[0])
        if len(others) == 1 and "type" in others[0] and "anyOf" not in others[0]:
            merged = dict(others[0])
            kind = merged["type"]
            if isinstance(kind, str):
                merged["type"] = [kind, "null"]
            if isinstance(merged.get("enum"), list) and None not in merged["enum"]:
                merged["enum"] = [*merged["enum"], None]
            if report:
                self.change(path, "anyOf", 'a type or null became a ["type", "null"] list')
            return merged
        if not others:
            return {"type": "null"}
        return {"anyOf": [*others, *([{"type": "null"}] if nulls else [])]}

    def types(self, s: dict[str, Any], path: str) -> set[str]:
        type_path = child_path(path, "type")
        kind = s.get("type")
        if kind is None:
            for inferred, keys in _INFERRED_TYPE:
                if any(k in s for k in keys):
                    s["type"] = kind = inferred
                    self.change(type_path, "type", f"inferred {inferred!r} from its keywords; values of other "
                                "types are no longer accepted", lossy=True)
                    break
            else:
                raise self.refuse("type", type_path, "a schema that accepts any value is not portable; give it a type")
        names = kind if isinstance(kind, list) else [kind]
        if not names or not all(isinstance(n, str) for n in names):
            raise self.refuse("type", type_path, 'must be a type name or a list of type names')
        unknown = [n for n in names if n not in KEYWORDS_BY_TYPE]
        if unknown:
            raise self.refuse("type", type_path, f"{unknown[0]!r} is not a JSON Schema type")
        types = set(names)
        if s.pop("nullable", False) is True:
            types.add("null")
            self.change(child_path(path, "nullable"), "nullable", 'read as a ["type", "null"] list')
        if {"integer", "number"} <= types:
            types.discard("integer")  # every integer is a number
            self.change(type_path, "type", "integer is part of number")
        return types

    def split_types(self, s: dict[str, Any], path: str, types: set[str]) -> dict[str, Any]:
        """["string", "integer"] has no portable list form: one anyOf branch per type."""
        branches = []
        order = [t for t in ("object", "array", "string", "integer", "number", "boolean", "null") if t in types]
        for kind in order:
            allowed = KEYWORDS_BY_TYPE[kind] | {"exclusiveMinimum", "exclusiveMaximum", "multipleOf", "uniqueItems",
                                                "prefixItems", "minProperties", "maxProperties",
                                                "unevaluatedProperties"}
            branches.append({"type": kind, **{k: v for k, v in s.items() if k in allowed}})
        self.change(child_path(path, "type"), "type", "a list of several types became one anyOf branch per type")
        result = {"anyOf": branches}
        if "description" in s:
            result["description"] = s["description"]
        return self.any_of(result, path)

    def enum(self, s: dict[str, Any], path: str) -> dict[str, Any]:
        from metis_core.messages.schema_enum import rewrite_enum

        return rewrite_enum(self, s, path)

    def typed(self, s: dict[str, Any], path: str, kind: str, notes: list[str]) -> dict[str, Any]:
        from metis_core.messages.schema_typed import normalize_typed

        return normalize_typed(self, s, path, kind, notes)


def _tagged(branches: list[Any]) -> bool:
    """Objects told apart by one required property holding a different constant in each branch."""
    tags: list[dict[str, set[str]]] = []
    for branch in branches:
        if not isinstance(branch, Mapping) or not isinstance(branch.get("properties"), Mapping):
            return False
        required = set(branch.get("required") or ())
        constants: dict[str, set[str]] = {}
        for name, prop in branch["properties"].items():
            if name in required and isinstance(prop, Mapping):
                if "const" in prop:
                    constants[name] = {_shown(prop["const"])}
                elif isinstance(prop.get("enum"), list):
                    constants[name] = {_shown(v) for v in prop["enum"]}
        tags.append(constants)
    shared = set.intersection(*(set(t) for t in tags)) if tags else set()
    for name in shared:
        values = [t[name] for t in tags]
        if all(not (a & b) for i, a in enumerate(values) for b in values[i + 1:]):
            return True
    return False


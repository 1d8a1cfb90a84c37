"""The drift check, shared by the offline test (the committed spec) and the
live one (the spec the server serves), and a reader of the committed spec's
YAML with the standard library alone."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import unittest

from bureau import models
from bureau.operations import EXCLUDED, OPERATIONS

SPEC = os.path.join(os.path.dirname(__file__), "..", "..", "..", "internal", "api", "openapi", "openapi.yaml")


def assert_no_drift(tc: unittest.TestCase, spec: dict, where: str) -> None:
    """Asserts that the OpenAPI document spec is the SDK's contract: its
    operations are the SDK's, and each model's fields are its schema's
    properties, both ways. where names the spec in messages."""
    ops = {}
    for path, item in spec["paths"].items():
        for method, op in item.items():
            if isinstance(op, dict) and "operationId" in op:
                ops[op["operationId"]] = (method.upper(), path)
    for op, want in OPERATIONS.items():
        tc.assertEqual(ops.get(op), want, f"the SDK's {op} is not {where}'s")
    tc.assertEqual(set(ops) - set(OPERATIONS) - set(EXCLUDED), set(), f"operations of {where} the SDK neither calls nor excludes")
    tc.assertEqual(set(EXCLUDED) - set(ops), set(), f"exclusions of operations {where} does not have")
    schemas = spec["components"]["schemas"]
    for name in dir(models):
        cls = getattr(models, name)
        if isinstance(cls, type) and issubclass(cls, models.Model) and cls.SCHEMA:
            tc.assertIn(cls.SCHEMA, schemas, f"{name}: {where} has no schema {cls.SCHEMA}")
            props = schemas[cls.SCHEMA].get("properties", {})
            tc.assertIsInstance(props, dict, f"{name}: the properties of schema {cls.SCHEMA} in {where}")
            fields = {f.name for f in dataclasses.fields(cls)} - {"extra"}
            tc.assertEqual(set(props) - fields, set(), f"{name}: properties of schema {cls.SCHEMA} in {where} that the model lacks")
            tc.assertEqual(fields - set(props), set(), f"{name}: fields the model has that schema {cls.SCHEMA} in {where} lacks")


# A mapping key (quoted, or plain up to the first ": ") and what follows it on its line.
_KEY = re.compile(r"""('(?:[^']|'')*'|"(?:[^"\\]|\\.)*"|[^\s'"#&*!|>%@`{}\[\],?-][^#]*?)\s*:(?:\s+(.*))?$""")


def read_yaml(text: str) -> dict:
    """Reads the block mappings of a YAML document such as the spec: each is a
    dict, with `&anchor`s, `*alias`es and `<<: *alias` merge keys resolved. A
    value that begins on its key's line (a scalar, a flow collection, a block
    scalar's indicator) is kept as the text there, unquoted; a block sequence
    as a list of its items' first lines. Enough for the names of keys and for
    one-line scalars; what it cannot read it refuses (ValueError) rather than
    reads wrong."""
    root: dict = {}
    stack: list = [(-1, root, None, None)]  # (its key's indent, a mapping or sequence, where it is: holder, key)
    anchors: dict = {}
    later = []  # aliases and merges, resolved in document order once every anchor is read
    skip_deeper = None  # the indent of the line whose further, deeper lines belong to its value
    for n, line in enumerate(text.splitlines(), 1):
        body = line.lstrip(" ")
        if body.startswith("\t"):
            raise ValueError(f"line {n}: a tab indent")
        if not body or body.startswith("#"):
            continue
        indent = len(line) - len(body)
        if skip_deeper is not None:
            if indent > skip_deeper:
                continue
            skip_deeper = None
        while stack[-1][0] >= indent:
            stack.pop()
        key_indent, parent, holder, hkey = stack[-1]
        if body == "-" or body.startswith("- "):
            # A block sequence's item: the value of the last key, indented more than it.
            if isinstance(parent, _Open) and not parent:
                parent = holder[hkey] = []
                stack[-1] = (key_indent, parent, holder, hkey)
            if not isinstance(parent, list):
                raise ValueError(f"line {n}: a sequence item among mapping keys")
            parent.append(body[1:].strip())
            skip_deeper = indent
            continue
        m = _KEY.match(body)
        if not m or isinstance(parent, list):
            raise ValueError(f"line {n}: not a mapping key: {body!r}")
        key, value = _scalar(m.group(1)), _strip_comment(m.group(2) or "")
        if key in parent:
            raise ValueError(f"line {n}: {key!r} again")
        anchor = None
        if value.startswith("&"):
            anchor, _, value = value[1:].partition(" ")
            value = value.strip()
        if value.startswith("*"):
            later.append((parent, key, value[1:], n))
            parent[key] = None
            skip_deeper = indent
        elif value:
            parent[key] = {"{}": {}, "[]": []}.get(value, _scalar(value))
            skip_deeper = indent
        else:
            parent[key] = _Open()  # a mapping, or a sequence once an item comes
            stack.append((indent, parent[key], parent, key))
        if anchor:
            anchors[anchor] = (parent, key)
    for parent, key, alias, n in later:
        if alias not in anchors:
            raise ValueError(f"line {n}: *{alias} has no anchor before it")
        holder, hkey = anchors[alias]
        target = holder[hkey]
        if key != "<<":
            parent[key] = target
            continue
        del parent[key]
        if not isinstance(target, dict):
            raise ValueError(f"line {n}: <<: *{alias} is not a mapping")
        for k, v in target.items():
            parent.setdefault(k, v)  # the mapping's own keys win
    return _close(root)


class _Open(dict):
    """The value of a key with nothing after it on its line."""


def _close(v):
    if isinstance(v, _Open) and not v:
        return None  # nothing came: null
    if isinstance(v, dict):
        return {k: _close(x) for k, x in v.items()}
    return v


def _strip_comment(s: str) -> str:
    if s[:1] in ("'", '"'):
        return s.strip()
    return re.sub(r"\s+#.*$", "", s).strip()


def _scalar(s: str):
    s = s.strip()
    if len(s) >= 2 and s[0] == s[-1] == "'":
        return s[1:-1].replace("''", "'")
    if len(s) >= 2 and s[0] == s[-1] == '"':
        return json.loads(s)
    return s

"""The SDK against the committed OpenAPI spec (internal/api/openapi/openapi.yaml),
offline: the drift check the live tests run against the served spec."""

import unittest

from .spec import SPEC, assert_no_drift, read_yaml


class TestCommittedSpec(unittest.TestCase):
    def test_drift_against_the_committed_spec(self):
        with open(SPEC, encoding="utf-8") as f:
            spec = read_yaml(f.read())
        # The reader found the spec's operations and schemas, merge keys included.
        self.assertGreater(len(spec["paths"]), 50)
        self.assertLessEqual(set(spec["components"]["schemas"]["ConsoleToken"]["properties"]),
                             set(spec["components"]["schemas"]["ConsoleCreated"]["properties"]))
        assert_no_drift(self, spec, "the committed spec")


class TestReadYAML(unittest.TestCase):
    def test_mappings_anchors_merges_and_what_is_kept_as_text(self):
        doc = read_yaml("""\
# a comment
top:
  '200': {$ref: '#/x'}   # a flow mapping, kept as text
  "two words": plain text # a comment
  block: |
    not: a key
      nor: this
  folded: >-
    text
  list:
    - name: a
      in: path
    - b
  empty: []
  none:
  base: &base
    a: 1
    b: {type: string}
  derived:
    <<: *base
    b: mine
    c: 3
  alias: *base
  multi: 'one line
    and: another'
after: end
""")
        top = doc["top"]
        self.assertEqual(list(top), ["200", "two words", "block", "folded", "list", "empty", "none", "base", "derived", "alias", "multi"])
        self.assertEqual(top["200"], "{$ref: '#/x'}")
        self.assertEqual(top["two words"], "plain text")
        self.assertEqual([top["block"], top["folded"]], ["|", ">-"])
        self.assertEqual(top["list"], ["name: a", "b"])
        self.assertEqual([top["empty"], top["none"]], [[], None])
        self.assertEqual(top["base"], {"a": "1", "b": "{type: string}"})
        self.assertEqual(top["derived"], {"b": "mine", "c": "3", "a": "1"})
        self.assertEqual(top["alias"], top["base"])
        self.assertEqual(top["multi"], "'one line")
        self.assertEqual(doc["after"], "end")

    def test_what_it_cannot_read_it_refuses(self):
        for bad in ("a:\n- compact sequence\n", "- top sequence\n", "a: 1\na: 2\n", "a:\n  <<: *nowhere\n",
                    "a:\n  b: 1\n  just text\n", "a:\n\tb: 1\n"):
            with self.subTest(bad=bad), self.assertRaises(ValueError):
                read_yaml(bad)


if __name__ == "__main__":
    unittest.main()

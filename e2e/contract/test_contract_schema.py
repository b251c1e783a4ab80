"""The contract's record schema under Python's `jsonschema` (PyPI), the validator most Python consumers use.

docs/contracts/mutation_outcome_v1.json holds the JSON Schema of a mutation_outcome/v1 record
(`record_schema`) and ledger-entry to record examples (seed 000: "Consumers should validate against it").
The Rust tests (ledger/tests/ledger/contract.rs) validate the same examples with the Rust `jsonschema` crate; this
file proves a Python consumer can do the same: the schema compiles, every example record validates, and
records outside the contract are rejected. It also keeps every `pattern` inside the regular-expression
subset the JSON Schema specification recommends for portability (no `\\p{..}`, `\\s`, lookarounds).

Run: `python3 -m pytest -q e2e/contract` or `python3 -m unittest discover -s e2e/contract`. Needs
`jsonschema` (scripts/setup.sh installs it); takes well under a second.
"""

import copy
import json
import pathlib
import re
import unittest

import jsonschema

CONTRACT_PATH = (
    pathlib.Path(__file__).resolve().parents[2] / "docs" / "contracts" / "mutation_outcome_v1.json"
)
CONTRACT = json.loads(CONTRACT_PATH.read_text(encoding="utf-8"))
SCHEMA = CONTRACT["record_schema"]
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)

GOOD = {
    "schema": "mutation_outcome/v1",
    "logical_turn_id": "t",
    "mutation_id": "m",
    "tool": "x",
    "status": "completed",
    "resource_id": None,
    "url": None,
    "title": None,
}

# The recommended subset (JSON Schema 2020-12 core, "Regular Expressions"): characters, [..] and [^..]
# classes with ranges, quantifiers, ^ and $ anchors, (..) groups, |. Escapes: \uXXXX and escaped
# metacharacters only.
PORTABLE_ESCAPE = re.compile(r"\\(?:u[0-9A-Fa-f]{4}|[\\/.^$|?*+()\[\]{}-])")


def errors(record):
    return sorted(e.message for e in VALIDATOR.iter_errors(record))


def patterns(node, at="record_schema"):
    """Every (location, pattern) in the schema."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "pattern" and isinstance(value, str):
                yield at, value
            else:
                yield from patterns(value, f"{at}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from patterns(value, f"{at}/{i}")


class RecordSchema(unittest.TestCase):
    def test_the_schema_is_a_valid_draft_2020_12_schema(self):
        jsonschema.Draft202012Validator.check_schema(SCHEMA)
        self.assertEqual(SCHEMA["$schema"], "https://json-schema.org/draft/2020-12/schema")

    def test_every_pattern_uses_only_the_portable_subset(self):
        found = list(patterns(SCHEMA))
        self.assertGreaterEqual(len(found), 5, found)
        for at, pattern in found:
            re.compile(pattern)
            rest = PORTABLE_ESCAPE.sub("", pattern)
            self.assertNotIn("\\", rest, f"{at}: {pattern!r} has a non-portable escape")
            self.assertNotIn("(?", rest, f"{at}: {pattern!r} has a lookaround or flag group")

    def test_every_example_record_validates(self):
        examples = CONTRACT["examples"]
        self.assertGreaterEqual(len(examples), 30)
        validated = 0
        for example in examples:
            record = example["record"]
            if record is None:
                continue
            with self.subTest(example=example["name"]):
                self.assertEqual(errors(record), [])
                validated += 1
        self.assertGreaterEqual(validated, 25)

    def test_records_outside_the_contract_are_rejected(self):
        self.assertEqual(errors(GOOD), [])
        spoiled = {
            "control character in the title": {"title": "a\u0007b"},
            "tab in the title": {"title": "a\tb"},
            "trailing line feed in the title": {"title": "Service overview\n"},
            "C1 control in the title": {"title": "a\u0085b"},
            "DEL in the resource_id": {"resource_id": "dash\u007f1"},
            "NUL in the mutation_id": {"mutation_id": "m\u0000"},
            "trailing line feed in the tool": {"tool": "x\n"},
            "line feed in the url path": {"url": "https://example.com/a\nb"},
            "trailing line feed in the url": {"url": "https://example.com/a\n"},
            "no-break space in the url": {"url": "https://example.com/a\u00a0b"},
            "url with a query": {"url": "https://example.com/a?q=1"},
            "url with userinfo": {"url": "https://u:p@example.com/a"},
            "url of another scheme": {"url": "ftp://example.com/a"},
            "ledger status": {"status": "execution_started"},
            "wrong status": {"status": "done"},
            "other schema": {"schema": "mutation_outcome/v2"},
            "empty title": {"title": ""},
            "title over 512 characters": {"title": "a" * 513},
            "reason null": {"reason": None},
            "execution_timeout with completed": {"reason": "execution_timeout"},
            "pre_dispatch_deadline with outcome_unknown": {
                "status": "outcome_unknown",
                "reason": "pre_dispatch_deadline",
            },
            "extra key": {"extra": True},
        }
        for what, change in spoiled.items():
            with self.subTest(what):
                record = {**GOOD, **change}
                self.assertNotEqual(errors(record), [], f"the schema accepts a record with {what}")
        missing = copy.deepcopy(GOOD)
        del missing["resource_id"]
        self.assertNotEqual(errors(missing), [])

    def test_text_that_is_not_a_control_character_is_kept(self):
        kept = {
            "title": "Überblick \u200b\u202e 😀 [redacted] \u00a0",
            "resource_id": "dash-1 with spaces",
            "url": "https://xn--bcher-kva.example:8443/a;v=1/%20b",
            "status": "outcome_unknown",
            "reason": "execution_timeout",
        }
        self.assertEqual(errors({**GOOD, **kept}), [])
        self.assertEqual(errors({**GOOD, "status": "not_executed", "reason": "pre_dispatch_deadline"}), [])


if __name__ == "__main__":
    unittest.main()

"""A report's cell-key parts: the published schema (probe-report.v1.json, what fuzzers and clients read)
accepts exactly the values the server turns into a cell key. Schemathesis' long runs found two schema-valid
parts refused with 422: a backend "\\x1f" (Python's strip() removes U+001C-U+001F, which the \\s of JSON
Schema's regexes does not name) and a torch_version of blanks ending in U+0085 (in Rust's \\s, not in
ECMA's). The pattern now names every stripped character itself."""

from __future__ import annotations

import json
import re

import jsonschema
from hypothesis import given, settings
from hypothesis import strategies as st

from compat_service.domain.errors import ReportInvalidError
from compat_service.domain.evidence.cells import cell_key_of
from compat_service.domain.evidence.report import Environment
from tests.conftest import REPO_ROOT

SCHEMA = json.loads((REPO_ROOT / "compat_service/schemas/probe-report.v1.json").read_text())
ENV_SCHEMA = {**SCHEMA["$defs"]["Environment"], "$defs": SCHEMA["$defs"]}
BASE = {
    "torch_version": "2.13.0+cpu", "python_version": "3.11.7", "os": "linux", "arch": "x86_64",
    "backend": "cpu", "host_fingerprint": "f" * 32,
}
#: blanks of every engine's kind, the separators, '+', and ordinary characters
ALPHABET = " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2028\u3000\ufeff\u200b+a2.İ"


def _server_accepts(env: dict) -> bool:
    try:
        cell_key_of(Environment.model_validate(env))
    except ReportInvalidError:
        return False
    except ValueError:  # pydantic's own refusal
        return False
    return True


def _schema_accepts(env: dict) -> bool:
    return jsonschema.Draft202012Validator(ENV_SCHEMA).is_valid(env)


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(["torch_version", "python_version", "arch", "backend"]), st.text(ALPHABET, max_size=5))
def test_schema_and_server_agree_on_key_parts(field: str, value: str) -> None:
    env = {**BASE, field: value}
    if len(value.lower()) > 32:  # lower-casing that lengthens a part: refused after normalising (documented)
        return
    assert _schema_accepts(env) == _server_accepts(env), (field, value)


def test_the_found_case_is_refused_by_the_schema_too() -> None:
    env = {**BASE, "backend": "\x1f"}
    assert not _schema_accepts(env) and not _server_accepts(env)
    assert not _schema_accepts({**BASE, "torch_version": " +cu121"})
    assert re.search(SCHEMA["$defs"]["Environment"]["properties"]["backend"]["pattern"], "cuda")


def test_the_pattern_names_exactly_what_strip_removes() -> None:
    """Every character str.strip() removes, and no other, is in the pattern's class (one per engine's \\s
    would disagree: see the module docstring)."""
    pattern = re.compile(SCHEMA["$defs"]["Environment"]["properties"]["backend"]["pattern"])
    stripped = {chr(c) for c in range(0x3001) if chr(c).isspace()}
    not_matched = {chr(c) for c in range(0x3001) if not pattern.fullmatch(chr(c))}
    assert not_matched == stripped

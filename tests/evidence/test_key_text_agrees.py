"""A report's cell-key parts: the published schema (probe-report.v1.json, what fuzzers and clients read)
accepts exactly the values the server turns into a cell key. Schemathesis' long run found a schema-valid
backend ("\\x1f") refused with 422: Python's strip() removes U+001C-U+001F, which JSON Schema's \\s does not
name."""

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
ALPHABET = " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u2028\u3000\ufeff+a2.İ"


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

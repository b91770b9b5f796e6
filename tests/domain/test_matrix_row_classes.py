"""The matrix's rows (``rows.py``): generated from the schema, and the same rows on every path."""

from __future__ import annotations

import json

import pytest

from compat_service.domain.matrix.loading.loader import load_matrix_data, rows_of
from compat_service.domain.matrix.model import rows, rows_codegen


def test_rows_module_is_what_the_generator_writes() -> None:
    """The schema is written once: rows.py follows it (regenerate: python -m ...matrix.model.rows_codegen)."""
    assert rows_codegen.ROWS_FILE.read_text(encoding="utf-8") == rows_codegen.render()


def test_every_schema_model_has_its_row_class_with_the_same_fields() -> None:
    for model in rows_codegen._models(rows_codegen.ROOT):
        row_class = getattr(rows, rows_codegen._name(model))
        assert row_class._fields == tuple((name, info.alias or name) for name, info in model.model_fields.items())


def test_rows_hold_exactly_what_the_validated_models_hold() -> None:
    data = load_matrix_data()
    tables = rows_of(data)
    assert isinstance(tables, rows.MatrixTables)
    dumped = data.model_dump(mode="json", by_alias=True)
    # the same JSON, key for key and in the same order (matrix show --json prints it)
    assert json.dumps(rows.as_json(tables)) == json.dumps(dumped)
    # the snapshot's JSON (and the service's stored load) builds equal rows
    assert rows.MatrixTables.from_json(json.loads(json.dumps(dumped))) == tables


def test_rows_are_frozen_and_replace_copies() -> None:
    variant = rows_of(load_matrix_data()).build_variants.variants[0]
    with pytest.raises(AttributeError, match="frozen"):
        setattr(variant, "label", "cu999")  # noqa: B010 (the write the class refuses)
    changed = rows.replace(variant, label="cu999")
    assert (changed.label, variant.label != "cu999", changed.index_url) == ("cu999", True, variant.index_url)
    assert changed != variant and rows.replace(variant) == variant
    with pytest.raises(TypeError, match="no field"):
        rows.replace(variant, lable="cu999")


def test_a_missing_default_takes_the_schema_default() -> None:
    """An older stored load without a field the schema has since added (with a default) still builds."""
    row = rows.Versioned.from_json({"version": "0.18.1"})
    assert (row.source, row.applies, row.note) == ([], None, None)

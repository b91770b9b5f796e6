"""A compiled cache of the validated matrix, so `accelenv resolve` starts without YAML or pydantic.

Loading matrix_data means parsing YAML and validating it with pydantic: ~0.3 s, most of it building the
models. The first load writes the validated data as JSON into the user cache directory, keyed by a hash
of the data files *and* of the schema module, so any edit to either misses the cache. Later loads read
the JSON into plain namespaces with the same attribute names as the models; `InMemoryMatrix` reads both.

Override the directory with ACCELENV_CACHE_DIR; ACCELENV_NO_MATRIX_CACHE=1 turns the cache off.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from compat_service.domain.matrix.interface import InMemoryMatrix

#: bump when the snapshot layout changes
SNAPSHOT_FORMAT = "1"
#: mappings in the schema that stay dicts (every other JSON object is a row); their values stay plain
_DICT_FIELDS = frozenset({"install_notes", "python_by_platform", "torch_requirement", "applies"})
#: mappings in the schema that stay dicts of rows (name -> row)
_ROW_DICT_FIELDS = frozenset({"installs"})
_SCHEMA_FILE = Path(__file__).with_name("schema.py")
#: the merge of the generated layer shapes the data too: an edit to it must miss the cache
_LAYER_FILES = tuple(Path(__file__).with_name(name) for name in ("index_layer.py", "index_facts.py", "markers.py"))


def bundled_data_dir() -> Path:
    from matrix_data import DATA_DIR

    return DATA_DIR


def cache_dir() -> Path:
    override = os.environ.get("ACCELENV_CACHE_DIR")
    if override:
        return Path(override)
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("accelenv", appauthor=False))


def data_digest(data_dir: Path) -> str:
    digest = hashlib.sha256(SNAPSHOT_FORMAT.encode())
    digest.update(_SCHEMA_FILE.read_bytes())
    for layer_file in _LAYER_FILES:
        digest.update(layer_file.read_bytes())
    for path in sorted([*data_dir.glob("*.yaml"), *data_dir.glob("index/*.yaml")]):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def load_matrix_cached(path: Path | None = None) -> InMemoryMatrix:
    """The matrix in `path` (default: the bundled matrix_data), from the snapshot when it is current."""
    data_dir = Path(path) if path is not None else bundled_data_dir()
    use_cache = os.environ.get("ACCELENV_NO_MATRIX_CACHE", "") in ("", "0")
    snapshot = cache_dir() / f"matrix-{data_digest(data_dir)[:32]}.json" if use_cache else None
    if snapshot is not None and snapshot.is_file():
        try:
            return InMemoryMatrix(_namespaces(json.loads(snapshot.read_text(encoding="utf-8"))))
        except (ValueError, KeyError, AttributeError, TypeError):
            pass  # a damaged snapshot is rebuilt from the YAML below
    from compat_service.domain.matrix.loader import load_matrix_data

    data = load_matrix_data(data_dir)
    if snapshot is not None:
        _write_atomically(snapshot, json.dumps(data.model_dump(mode="json", by_alias=False)))
    return InMemoryMatrix(data)


def _namespaces(value: Any, key: str | None = None) -> Any:
    if isinstance(value, dict):
        if key in _DICT_FIELDS:
            return dict(value)
        if key in _ROW_DICT_FIELDS:
            return {k: _namespaces(v) for k, v in value.items()}
        return SimpleNamespace(**{k: _namespaces(v, k) for k, v in value.items()})
    if isinstance(value, list):
        return [_namespaces(v) for v in value]
    return value


def _write_atomically(target: Path, text: str) -> None:
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".matrix-", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, target)
    except OSError:
        # A read-only or full cache directory only costs speed, never correctness.
        pass

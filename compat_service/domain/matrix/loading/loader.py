"""Read matrix_data/ into a validated `MatrixData`, collecting every problem before failing; `load_matrix_rows`
hands the same data on as the runtime rows (``rows.MatrixTables``) everything that reads the matrix takes.

Three layers of problems, all reported together, each naming the file and the key path:
1. the file itself: missing, unreadable, YAML syntax (with line and column), a key written twice;
2. its shape: pydantic errors against the file's model (unknown keys, bad types, bad version strings);
3. cross-file rules (``validation``), run on every row that passed its own shape check.

Parsing uses libyaml's ``CSafeLoader`` when PyYAML was built with it: start-up time matters to the CLI.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import BaseModel, ValidationError

from compat_service.domain.errors import MatrixDataError
from compat_service.domain.json_types import JsonObject
from compat_service.domain.matrix.index.index_layer import (
    TORCH_FILE,
    VENDOR_FILE,
    apply_index_layer,
    load_refresh_config,
    merge_layer,
)
from compat_service.domain.matrix.loading.validation import FileRows, cross_file_problems
from compat_service.domain.matrix.model.rows import MatrixTables
from compat_service.domain.matrix.model.schema import MATRIX_FILES, MatrixData
from compat_service.domain.matrix.problems import Problem, format_loc

_BaseLoader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _StrictLoader(_BaseLoader):
    """Safe loading that refuses a key written twice in one mapping (YAML would keep the last silently)."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode) -> dict[object, object]:
    loader.flatten_mapping(node)
    seen: dict[object, int] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"key {key!r} appears twice in one mapping (first on line {seen[key] + 1})",
                key_node.start_mark,
            )
        seen[key] = key_node.start_mark.line
    return dict(loader.construct_pairs(node))


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)

# attribute of MatrixData for each file name ("torch_releases.yaml" -> "torch_releases")
_ATTR = {name: name.removesuffix(".yaml") for name in MATRIX_FILES}


def default_path() -> Path:
    from matrix_data import DATA_DIR

    return DATA_DIR


def _read_yaml(file: Path, name: str) -> tuple[JsonObject | None, list[Problem]]:
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, [Problem(name, "", "file is missing; every file in MATRIX_FILES must exist")]
    except (OSError, UnicodeDecodeError) as exc:
        return None, [Problem(name, "", f"cannot be read: {exc}")]
    try:
        raw = yaml.load(text, Loader=_StrictLoader)
    except yaml.MarkedYAMLError as exc:
        return None, [_yaml_problem(name, exc)]
    except yaml.YAMLError as exc:
        return None, [Problem(name, "", f"YAML error: {exc}")]
    if not isinstance(raw, dict):
        return None, [Problem(name, "", f"must be a mapping with a 'schema' key, found {type(raw).__name__}")]
    return raw, []


def _yaml_problem(name: str, exc: yaml.MarkedYAMLError) -> Problem:
    """A YAML error with its position (and where the enclosing block starts, when on another line)."""
    mark = exc.problem_mark or exc.context_mark
    where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "unknown position"
    what = " ".join(part for part in (exc.context, exc.problem) if part)
    kind = "YAML error" if isinstance(exc, yaml.constructor.ConstructorError) else "YAML syntax error"
    start = exc.context_mark
    if start is not None and mark is not None and start.line != mark.line:
        what += f" (the enclosing block starts on line {start.line + 1})"
    return Problem(name, where, f"{kind}: {what}")


def _message(error: JsonObject) -> str:
    kind = error["type"]
    if kind == "extra_forbidden":
        return "unknown key (not in the schema: check its spelling or extend matrix/schema.py)"
    if kind == "missing":
        if error["loc"] and error["loc"][-1] in ("torchvision", "torchaudio"):
            return (
                "torch release without companions: required key is missing "
                "(write {version: null, source: [], note: why} if it is genuinely unknown)"
            )
        return "required key is missing (write it with null if the value is unknown)"
    msg = str(error["msg"])
    msg = msg.removeprefix("Value error, ")
    if kind not in ("value_error", "assertion_error") and "input" in error:
        msg += f" (found {error['input']!r})"
    return msg


def _schema_problems(name: str, exc: ValidationError) -> list[Problem]:
    return [Problem(name, format_loc(err["loc"]), _message(dict(err))) for err in exc.errors()]


def _rows_of(model: BaseModel) -> dict[str, list[tuple[int, BaseModel]]]:
    rows: dict[str, list[tuple[int, BaseModel]]] = {}
    for field in type(model).model_fields:
        value = getattr(model, field)
        if isinstance(value, list):
            rows[field] = [(i, item) for i, item in enumerate(value) if isinstance(item, BaseModel)]
    return rows


def _lenient_rows(model_cls: type[BaseModel], raw: JsonObject) -> dict[str, list[tuple[int, BaseModel]]]:
    """Rows of a file that failed validation, each list item validated on its own; failing items left out."""
    rows: dict[str, list[tuple[int, BaseModel]]] = {}
    for field, info in model_cls.model_fields.items():
        key = info.alias or field
        items = raw.get(key)
        args = getattr(info.annotation, "__args__", ())
        item_cls = args[0] if args and isinstance(args[0], type) and issubclass(args[0], BaseModel) else None
        if item_cls is None or not isinstance(items, list):
            continue
        kept: list[tuple[int, BaseModel]] = []
        for i, item in enumerate(items):
            try:
                kept.append((i, item_cls.model_validate(item)))
            except ValidationError:
                continue
        rows[field] = kept
    return rows


def _load(path: Path | None, index_layer: bool = True) -> tuple[MatrixData | None, list[Problem]]:
    base = Path(path) if path is not None else default_path()
    problems: list[Problem] = []
    if not base.is_dir():
        return None, [Problem(str(base), "", "is not a directory holding the matrix_data YAML files")]
    models: dict[str, BaseModel] = {}
    rows: FileRows = {}
    raws: JsonObject = {}
    for name in MATRIX_FILES:
        raws[name], read_problems = _read_yaml(base / name, name)
        problems += read_problems
    # the generated layer (matrix_data/index/) merged into the curated tables; conflicts are problems
    if index_layer:
        problems += apply_index_layer(raws, base)
    for name, model_cls in MATRIX_FILES.items():
        raw = raws[name]
        if raw is None:
            continue
        try:
            model = model_cls.model_validate(raw)
        except ValidationError as exc:
            problems += _schema_problems(name, exc)
            rows[name] = _lenient_rows(model_cls, raw)
            continue
        models[name] = model
        rows[name] = _rows_of(model)
    problems += cross_file_problems(rows)
    if problems:
        return None, problems
    data = MatrixData.model_validate({_ATTR[name]: model for name, model in models.items()})
    return data, []


def layer_conflicts(path: Path | None, layer: JsonObject) -> list[Problem]:
    """The conflicts the curated files at ``path`` would have with ``layer`` (project -> PackageFacts), e.g. the
    facts a `matrix refresh --check` just read; unreadable curated files are left to `matrix validate`."""
    base = Path(path) if path is not None else default_path()
    raws = {name: _read_yaml(base / name, name)[0] for name in (TORCH_FILE, VENDOR_FILE)}
    return merge_layer(raws, layer, load_refresh_config(base)[0])


def matrix_data_problems(path: Path | None = None) -> list[Problem]:
    """Every problem in the matrix at ``path`` (default: the bundled copy); empty when it is valid."""
    return _load(path)[1]


def load_matrix_data(path: Path | None = None, *, index_layer: bool = True) -> MatrixData:
    """The validated matrix at ``path`` (default: the bundled ``matrix_data``); raises `MatrixDataError`.

    ``index_layer=False`` reads the curated files alone (what `matrix refresh` needs: it rewrites the layer).
    """
    data, problems = _load(path, index_layer)
    if data is None:
        raise MatrixDataError(
            f"matrix_data at {Path(path) if path is not None else default_path()} has "
            f"{len(problems)} problem(s)",
            hint="fix each file and key listed, then run `accelenv matrix validate`",
            causes=[p.to_cause() for p in problems],
        )
    return data


def rows_of(data: MatrixData) -> MatrixTables:
    """The validated ``data`` as the runtime rows (the same fields, read by attribute)."""
    return MatrixTables.from_json(data.model_dump(mode="json", by_alias=True))


def load_matrix_rows(path: Path | None = None) -> MatrixTables:
    """`load_matrix_data` as the rows the matrix's readers take (`InMemoryMatrix`, the release views)."""
    return rows_of(load_matrix_data(path))

"""Writes ``rows.py``, the matrix's runtime row classes, from the pydantic schema (``schema.py``).

The schema stays the one description of matrix_data: it validates the files and words their errors. What the
readers of the matrix get is one frozen, slotted class per schema model with the same fields, types and
defaults, and a ``from_json`` that builds it from the schema's JSON form (what ``model_dump(mode="json",
by_alias=True)`` writes, the snapshot and the service's stored load hold). They are generated here so that
the schema is written once; only the shape is carried over, the checks (patterns, lengths, version strings)
stay in the schema, which every row passed before it was built.

Plain generated classes, not msgspec structs or dataclasses: importing msgspec (its C core pulls in decimal,
uuid and typing_extensions) and defining its structs cost ~12 ms on the cached path of `accelenv resolve`,
past its 4x start-up budget; ``@dataclass`` builds each class at import (~0.2 ms a class). These classes cost
what their ``class`` statements cost.

Regenerate after editing schema.py (a test fails while rows.py differs from what this writes):

    .venv/bin/python -m compat_service.domain.matrix.model.rows_codegen
"""

from __future__ import annotations

import datetime as dt
import sys
import types
import typing
from pathlib import Path

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from compat_service.domain.backends import Platform
from compat_service.domain.matrix.model import schema

ROWS_FILE = Path(__file__).with_name("rows.py")
#: the schema's root model and the name of its row class (``MatrixRows`` already names the evidence rows of
#: ``GET /v1/matrix``, db/evidence/matrix_cells.py)
ROOT, ROOT_NAME = schema.MatrixData, "MatrixTables"
#: named types rows.py imports rather than spelling out (a Literal equal to one of these is written by name)
_NAMED = {Platform: "Platform"}

_HEADER = '''"""The matrix's rows: one frozen class per model of ``schema.py``, the same on every path.

GENERATED from compat_service/domain/matrix/model/schema.py by
compat_service/domain/matrix/model/rows_codegen.py (which says why plain classes); do not edit. Regenerate with
    .venv/bin/python -m compat_service.domain.matrix.model.rows_codegen

The schema validates matrix_data; these classes carry the validated rows to every reader of the matrix
(``loader.load_matrix_rows``, ``snapshot.load_matrix_cached``, the service's stored load), built by
``MatrixTables.from_json`` from the schema's JSON form, without importing pydantic. Fields, types and
defaults are the schema's; its checks are not repeated here. ``as_json`` writes a row back in that form,
``replace`` copies one with some fields changed.
"""

from __future__ import annotations

import datetime as dt
from typing import ClassVar, Literal

from compat_service.domain.backends import Platform
from compat_service.domain.matrix.model.row_base import Fields, Frozen, JsonObject, as_json, replace
from compat_service.domain.matrix.model.row_base import set_slot as _set

__all__ = [
{names}
]

'''


def _base(model: type[BaseModel]) -> type[BaseModel] | None:
    """The schema model ``model`` extends (``Row``), None for a direct BaseModel subclass."""
    base = model.__bases__[0]
    return base if base is not BaseModel and issubclass(base, BaseModel) else None


def _models(root: type[BaseModel]) -> list[type[BaseModel]]:
    """Every model reachable from ``root``'s fields and their bases, in the order schema.py defines them."""
    seen: set[type[BaseModel]] = set()

    def walk(annotation: object) -> None:
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            if annotation not in seen:
                seen.add(annotation)
                walk(_base(annotation))
                for info in annotation.model_fields.values():
                    walk(info.annotation)
            return
        for arg in typing.get_args(annotation):
            walk(arg)

    walk(root)
    order = {obj: i for i, obj in enumerate(vars(schema).values()) if isinstance(obj, type)}
    return sorted(seen, key=lambda model: order[model])


def _name(model: type[BaseModel]) -> str:
    return ROOT_NAME if model is ROOT else model.__name__


def _literal(value: object) -> str:
    return f'"{value}"' if isinstance(value, str) and '"' not in value else repr(value)


def _strip(annotation: object) -> object:
    """The annotation without ``Annotated`` checks (only the shape is carried over)."""
    while typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    return annotation


def _type(annotation: object) -> str:
    """The annotation as rows.py writes it."""
    annotation = _strip(annotation)
    for named, name in _NAMED.items():
        if annotation == named:
            return name
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(_type(arg) for arg in args)
    if origin is typing.Literal:
        return f"Literal[{', '.join(_literal(arg) for arg in args)}]"
    if origin in (list, dict):
        return f"{origin.__name__}[{', '.join(_type(arg) for arg in args)}]"
    return _leaf_type(annotation)


#: the plain annotations and how rows.py writes them
_LEAF_TYPES: dict[object, str] = {type(None): "None", dt.date: "dt.date", str: "str", int: "int", bool: "bool",
                                  float: "float"}


def _leaf_type(annotation: object) -> str:
    """A plain annotation (no union, literal or container) as rows.py writes it."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return _name(annotation)
    try:
        return _LEAF_TYPES[annotation]
    except (KeyError, TypeError):
        raise TypeError(f"rows_codegen cannot write the annotation {annotation!r}: extend _type") from None


def _convert(annotation: object, expr: str, depth: int = 0) -> str:
    """Python source that turns ``expr`` (the JSON form of a present value of ``annotation``) into the row
    value; ``expr`` itself where the JSON form is the value (strings, numbers, lists of them)."""
    annotation = _strip(annotation)
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        return _convert(_present(annotation, args), expr, depth)  # None stays None: the caller tests for it
    item = f"x{depth}"
    if origin is list:
        inner = _convert(args[0], item, depth + 1)
        return expr if inner == item else f"[{inner} for {item} in {expr}]"
    if origin is dict:
        inner = _convert(args[1], item, depth + 1)
        return expr if inner == item else f"{{k{depth}: {inner} for k{depth}, {item} in {expr}.items()}}"
    if annotation is dt.date:
        return f"dt.date.fromisoformat({expr})"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return f"{_name(annotation)}.from_json({expr})"
    return expr


def _present(annotation: object, args: tuple[object, ...]) -> object:
    """The one type of an optional union besides None."""
    present = [arg for arg in args if arg is not type(None)]
    if len(present) != 1:
        raise TypeError(f"rows_codegen cannot convert the union {annotation!r}: extend _convert")
    return present[0]


def _optional(annotation: object) -> bool:
    annotation = _strip(annotation)
    return typing.get_origin(annotation) in (typing.Union, types.UnionType) and type(None) in typing.get_args(
        annotation
    )


def _tuple(start: str, items: list[str]) -> list[str]:
    """``start`` and a tuple display, on one line when it fits in 120 columns, else one item a line."""
    line = f"{start}({', '.join(items)}{',' if len(items) == 1 else ''})"
    if len(line) <= 120:
        return [line]
    return [f"{start}(", *(f"        {item}," for item in items), "    )"]


def _default(info: FieldInfo) -> str | None:
    """The default as source (a factory's fresh value, ``[]`` or ``{}``), None when the field is required."""
    if info.default_factory is list:
        return "[]"
    if info.default_factory is dict:
        return "{}"
    if info.default_factory is not None:
        raise TypeError(f"rows_codegen cannot write the default factory {info.default_factory!r}: extend _default")
    return None if info.default is PydanticUndefined else _literal(info.default)


def _class(model: type[BaseModel]) -> str:
    """One class: annotations, slots, a keyword-only ``__init__`` and ``from_json``; a subclass of a schema
    model (``Row``) extends that model's class (its own fields in ``__slots__``, every field in ``__init__``)."""
    base = _base(model)
    inherited = base.model_fields if base is not None else {}
    fields = model.model_fields
    own = [name for name, info in fields.items() if repr(info) != repr(inherited.get(name))]
    name = _name(model)
    lines = ["", "", "", f"class {name}({_name(base) if base else 'Frozen'}):", f'    """{_summary(model)}"""', ""]
    lines += _tuple("    __slots__ = ", [_literal(n) for n in own])
    keys = [f"({_literal(n)}, {_literal(info.alias or n)})" for n, info in fields.items()]
    lines += _tuple("    _fields: ClassVar[Fields] = ", keys)
    lines += [f"    {n}: {_type(fields[n].annotation)}" for n in own]
    lines += _init_lines(fields)
    lines += ["", "    @classmethod", f"    def from_json(cls, data: JsonObject) -> {name}:"]
    lines += _from_json_lines(fields)
    return "\n".join(lines)


def _summary(model: type[BaseModel]) -> str:
    """The class docstring: the schema model's first line."""
    if model is ROOT:
        return f"The whole matrix, one table per file (schema.{model.__name__})."
    doc = (model.__doc__ or "").strip().splitlines()
    return doc[0] if doc else f"Mirrors schema.{model.__name__}."


def _init_lines(fields: dict[str, FieldInfo]) -> list[str]:
    """The keyword-only ``__init__`` (a list or dict default is None in the signature, a fresh value inside)."""
    params = []
    for n, info in fields.items():
        default = _default(info)
        if default in ("[]", "{}"):
            params.append(f"{n}: {_type(info.annotation)} | None = None")
        else:
            params.append(f"{n}: {_type(info.annotation)}" + (f" = {default}" if default is not None else ""))
    lines = ["", "    def __init__(", "        self,", "        *,", *(f"        {p}," for p in params)]
    lines.append("    ) -> None:")
    for n, info in fields.items():
        default = _default(info)
        value = f"{default} if {n} is None else {n}" if default in ("[]", "{}") else n
        lines.append(f"        _set(self, {_literal(n)}, {value})")
    return lines


def _from_json_lines(fields: dict[str, FieldInfo]) -> list[str]:
    """``from_json``'s body: each field read from its JSON key and converted where its JSON form is not its value."""
    lines: list[str] = []
    arguments = []
    for n, info in fields.items():
        key, default = info.alias or n, _default(info)
        read = f"data[{_literal(key)}]" if default is None else f"data.get({_literal(key)}, {default})"
        converted = _convert(info.annotation, n)
        if converted == n:
            arguments.append(f"{n}={read}")
            continue
        if _optional(info.annotation):
            lines += [f"        {n} = {read}", f"        if {n} is not None:", f"            {n} = {converted}"]
        else:
            lines.append(f"        {n} = {_convert(info.annotation, read)}")
        arguments.append(f"{n}={n}")
    return [*lines, "        return cls(", *(f"            {a}," for a in arguments), "        )"]


def render() -> str:
    """rows.py as the schema asks for it now."""
    models = _models(ROOT)
    names = "\n".join(f'    "{n}",' for n in sorted([*(_name(m) for m in models), "Frozen", "as_json", "replace"]))
    return _HEADER.format(names=names).rstrip("\n") + "".join(_class(m) for m in models) + "\n"


def main() -> int:
    text = render()
    if ROWS_FILE.exists() and ROWS_FILE.read_text(encoding="utf-8") == text:
        print(f"{ROWS_FILE} is up to date")
        return 0
    ROWS_FILE.write_text(text, encoding="utf-8")
    print(f"wrote {ROWS_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

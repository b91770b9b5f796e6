"""One problem found in matrix_data: the file, the key path inside it, and what is wrong."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from compat_service.domain.errors import Cause


def format_loc(loc: Iterable[str | int]) -> str:
    """('minors', 3, 'patches', 1, 'version') -> 'minors[3].patches[1].version'."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


@dataclass(frozen=True, order=True)
class Problem:
    file: str
    #: key path inside the file ('minors[3].patches[1].torchvision.version'), a position for syntax errors,
    #: or '' for the file as a whole
    key: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}: {self.key}: {self.message}" if self.key else f"{self.file}: {self.message}"

    def to_cause(self) -> Cause:
        return Cause(constraint=str(self), origin=f"matrix_data/{self.file}")

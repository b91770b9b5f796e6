"""Text from reports and the service, made safe to print in a terminal.

Such text is data, never markup or terminal control: ``visible`` (compat_service/domain/visible_text.py)
shows control and bidi characters as escapes; ``say`` writes a plain line through it (every CLI line that
carries text from a server, a report or a file name); ``plain`` wraps the result in a Rich ``Text``, which
Rich prints as it is (a ``str`` cell of a table is parsed as markup: ``[/]`` crashed `matrix show`,
``[link=…]`` was applied).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, TextIO

from compat_service.domain.visible_text import visible

if TYPE_CHECKING:
    from rich.text import Text

__all__ = ["plain", "say", "visible"]


def plain(text: Any) -> Text:
    """``visible(text)`` as a Rich ``Text``: printed literally, never read as markup."""
    from rich.text import Text

    return Text(visible(text))


def say(line: str, out: TextIO | None = None) -> None:
    """Write one line (stderr unless ``out``) carrying text from a server, a report or a file name, with
    control and bidi characters shown as escapes: the one printer of such plain-text lines in the CLI."""
    (out or sys.stderr).write(visible(line) + "\n")

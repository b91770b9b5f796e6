"""Text from reports and the service, made safe to print in a terminal.

Probe reports are written by whoever holds a report token, and the service passes their fields on: such
text is data, never markup or terminal control. ``visible`` replaces every control character (terminal
escape sequences start with one) and every bidirectional formatting character (which can make a line read
differently from what it holds) with its ``\\u`` escape; ``plain`` wraps the result in a Rich ``Text``, which
Rich prints as it is (a ``str`` cell of a table is parsed as markup: ``[/]`` crashed `matrix show`,
``[link=…]`` was applied).
"""

from __future__ import annotations

import unicodedata
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.text import Text

#: characters kept as they are although Unicode calls them control or format characters
_KEPT = frozenset("\n\t")


def _escaped(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def visible(text: Any) -> str:
    """``text`` (anything; None is ``-``) with control, format (bidi, zero-width) and separator characters
    other than space, newline and tab shown as escapes."""
    if text is None:
        return "-"
    text = str(text)
    if text.isprintable():  # the common case: nothing to do
        return text
    return "".join(
        c if c in _KEPT or c == " " or unicodedata.category(c) not in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")
        else _escaped(c)
        for c in text
    )


def plain(text: Any) -> Text:
    """``visible(text)`` as a Rich ``Text``: printed literally, never read as markup."""
    from rich.text import Text

    return Text(visible(text))

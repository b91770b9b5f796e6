"""Text from reports shown as data: control and bidirectional formatting characters made visible.

Probe reports are written by whoever holds a report token. Wherever their text is shown (a terminal:
cli/terminal_text.py; an HTML page: the pages' Jinja ``finalize``), ``visible`` replaces every control
character (terminal escape sequences start with one), every format character (bidi overrides and
isolates, zero-width characters: they make a line read differently from what it holds) and line or
paragraph separators with a ``\\x`` / ``\\u`` escape. Newline, tab and space stay.
"""

from __future__ import annotations

import unicodedata

_KEPT = frozenset("\n\t ")
_HIDDEN = frozenset(("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"))


def _escaped(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def visible(text: object) -> str:
    """``text`` (anything; None is ``-``) with the characters above shown as escapes."""
    if text is None:
        return "-"
    text = str(text)
    if text.isprintable():  # the common case: nothing to do
        return text
    return "".join(c if c in _KEPT or unicodedata.category(c) not in _HIDDEN else _escaped(c) for c in text)

"""Text from reports and the service, made safe to print in a terminal.

Such text is data, never markup or terminal control: ``visible`` (compat_service/domain/visible_text.py)
shows control and bidi characters as escapes; ``plain`` wraps the result in a Rich ``Text``, which Rich
prints as it is (a ``str`` cell of a table is parsed as markup: ``[/]`` crashed `matrix show`, ``[link=…]``
was applied).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from compat_service.domain.visible_text import visible

if TYPE_CHECKING:
    from rich.text import Text

__all__ = ["plain", "visible"]


def plain(text: Any) -> Text:
    """``visible(text)`` as a Rich ``Text``: printed literally, never read as markup."""
    from rich.text import Text

    return Text(visible(text))

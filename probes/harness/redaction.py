"""Keep host paths out of the report: tracebacks and stderr tails name files, not where they live.

A crash dump or a traceback carries absolute paths: the bundle's temporary directory, the user's home,
a virtual environment. The report says which file, never whose machine: a path under ``site-packages``
keeps what follows (``torch/nn/modules/module.py``), the bundle's own modules are ``<bundle>/...``, and
any other absolute path is cut to its file name behind ``<path>/``.
"""

import os
import re
import tempfile

# An absolute POSIX path (two or more components) or a Windows drive path, inside any text.
_PATH = re.compile(
    r"(?:(?<![\w.<>/-])/(?:[^\s\"'/:<>|]+/)+[^\s\"'/:<>|,)]*)"
    r"|(?:\b[A-Za-z]:\\(?:[^\s\"'\\:<>|]+\\)+[^\s\"'\\:<>|,)]*)"
)
_PACKAGES = re.compile(r"[/\\](?:site|dist)-packages[/\\]")
_BUNDLE = re.compile(r"accelenv_probe\.py[/\\]")


def _one(path):
    match = _PACKAGES.search(path)
    if match:
        return path[match.end():].replace("\\", "/")
    match = _BUNDLE.search(path)
    if match:
        return "<bundle>/" + path[match.end():].replace("\\", "/")
    name = re.split(r"[/\\]", path.rstrip("/\\"))[-1]
    return "<path>/" + name if name else "<path>"


def _private_prefixes():
    prefixes = []
    for prefix in (os.path.expanduser("~"), tempfile.gettempdir()):
        if prefix and prefix not in ("/", "~") and len(prefix) > 1:
            prefixes.append(prefix)
    return sorted(set(prefixes), key=len, reverse=True)


def redact_text(text):
    """``text`` with every absolute path replaced as the module says."""
    if not text or ("/" not in text and "\\" not in text):
        return text
    text = _PATH.sub(lambda m: _one(m.group(0)), text)
    for prefix in _private_prefixes():  # what the pattern could not see as a path (e.g. a bare home dir)
        text = text.replace(prefix, "<path>")
    return text


def redact(value):
    """``value`` (report fragment: str, dict, list) with paths redacted in every string."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return dict((k, redact(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return [redact(v) for v in value]
    return value

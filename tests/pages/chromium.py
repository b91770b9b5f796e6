"""Where Debian's Chromium is (``ACCELENV_TEST_CHROMIUM`` overrides), for the page tests and benchmarks."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

CANDIDATES = ("chromium", "chromium-browser")
INSTALL_HINT = "apt-get update && apt-get install -y chromium chromium-driver"


def chromium_path() -> str | None:
    explicit = os.environ.get("ACCELENV_TEST_CHROMIUM")
    if explicit:
        return explicit if Path(explicit).is_file() else None
    return next((found for name in CANDIDATES if (found := shutil.which(name))), None)

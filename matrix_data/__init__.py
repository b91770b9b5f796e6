"""The bundled compatibility matrix: YAML files, one table per file. See README.md for the schema."""

from __future__ import annotations

from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent

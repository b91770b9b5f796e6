"""The shapes of JSON (and YAML) documents as the domain builds and reads them, named once.

A `JsonObject` is a mapping whose shape a schema checks or the code that builds it defines: a ``json.loads`` or
``yaml.safe_load`` result before validation, a ``model_dump(mode="json")``, a document written for the wire.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["JsonMapping", "JsonObject"]

#: a JSON object: string keys, values of the shape its schema or its builder says
JsonObject = dict[str, Any]
#: a JSON object only read (a ``Mapping``, so a caller's dict or a read-only view passes)
JsonMapping = Mapping[str, Any]

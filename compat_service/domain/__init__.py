"""Pure logic: pydantic + packaging only. No web framework, database or HTTP client here."""

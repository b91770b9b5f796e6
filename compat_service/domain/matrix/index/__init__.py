"""The index layer: the schema of the generated facts (``matrix_data/index/``) and their merge into the curated
tables."""

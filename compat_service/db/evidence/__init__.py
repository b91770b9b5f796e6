"""Probe reports and evidence in the database: tables, ingest, queries, withdrawal."""

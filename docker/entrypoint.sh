#!/bin/sh
# Wait for the database, migrate, load the bundled matrix (a no-op when unchanged), serve.
set -eu

: "${ACCELENV_DATABASE_URL:?set ACCELENV_DATABASE_URL, e.g. postgresql+psycopg://user:pass@db:5432/accelenv}"

accelenv db wait --timeout "${ACCELENV_DB_WAIT_S:-60}"
accelenv db upgrade
accelenv db load
exec accelenv serve --host 0.0.0.0 --port "${ACCELENV_PORT:-8000}" --workers "${ACCELENV_WORKERS:-2}"

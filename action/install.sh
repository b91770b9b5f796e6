#!/usr/bin/env bash
# The Action's first step: accelenv from the Action's own checkout ($GITHUB_ACTION_PATH), never from a package
# name, into a virtual environment of its own made with the Python actions/setup-python set up for it
# (update-environment: false: the job's Python and PATH are untouched). Writes bin=<the venv's scripts folder>
# to $GITHUB_OUTPUT.
#   ACCELENV_TOOL_PYTHON  the Action's Python (setup-python's python-path output)
#   ACCELENV_TOOL_VENV    where its virtual environment goes (default: $RUNNER_TEMP/accelenv-tool)
set -euo pipefail

py="${ACCELENV_TOOL_PYTHON:?must name the Python of the Action (the python-path output of setup-python)}"
source_dir="${GITHUB_ACTION_PATH:?must name the checkout of the Action}"
venv="${ACCELENV_TOOL_VENV:-${RUNNER_TEMP:-/tmp}/accelenv-tool}"

"$py" -m venv "$venv"
bin="$venv/bin"
[[ -d "$bin" ]] || bin="$venv/Scripts"  # Windows runners
"$bin/python" -m pip install --quiet --disable-pip-version-check "$source_dir"
"$bin/accelenv" --help >/dev/null
if [[ -n "${GITHUB_OUTPUT:-}" ]]; then
  echo "bin=$bin" >> "$GITHUB_OUTPUT"
fi
version="$("$bin/python" -c 'import platform; print(platform.python_version())')"
echo "accelenv: installed from $source_dir into $venv (Python $version)"

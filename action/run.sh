#!/usr/bin/env bash
# The Action's second step: `accelenv ci matrix` or `accelenv ci check` from the Action's own environment.
# Inputs come from the environment (action.yml maps each input to ACCELENV_<NAME>), so the same script runs
# in any CI system or shell:
#   ACCELENV_BIN       the folder holding the Action's accelenv (install.sh's bin output)
#   ACCELENV_COMMAND   matrix | install | check
#   matrix: ACCELENV_SERVER (empty: the bundled matrix, offline), ACCELENV_TORCH, _PYTHON, _FAMILY, _BUILD, _OS,
#           _ARCH, _WITH, _MODE, _MAX_CELLS, _SHARD
#   install: ACCELENV_CELL, ACCELENV_PYTHON_EXE (the cell's install steps; writes constraints.txt)
#   check:  ACCELENV_CELL (toJSON(matrix)), ACCELENV_PYTHON_EXE (the Python under test; a name on PATH or a
#           path), ACCELENV_SERVER + ACCELENV_TOKEN (where the report goes), ACCELENV_INSTALL (true|false),
#           ACCELENV_CHECKS, ACCELENV_DEVICE, ACCELENV_FAIL_ON_SUBMIT (true|false), ACCELENV_WORKDIR
# Nothing the service sends is evaluated by a shell: the check runs the cell's install_argv as argument lists.
set -euo pipefail

accelenv="${ACCELENV_BIN:?must name the folder holding the accelenv of the Action (install.sh)}/accelenv"
github_output=()
if [[ -n "${GITHUB_OUTPUT:-}" ]]; then github_output=(--github-output "$GITHUB_OUTPUT"); fi

case "${ACCELENV_COMMAND:-}" in
  matrix)
    args=()
    for name in torch python family build os arch with mode max-cells shard; do
      var="ACCELENV_${name^^}"
      var="${var//-/_}"
      if [[ -n "${!var:-}" ]]; then args+=("--$name" "${!var}"); fi
    done
    "$accelenv" ci matrix "${args[@]}" --require-cells --include-only "${github_output[@]}"
    ;;
  install|check)
    if [[ -z "${ACCELENV_CELL:-}" ]]; then
      echo "accelenv: the $ACCELENV_COMMAND step needs the job's cell (the cell input: toJSON(matrix))" >&2
      exit 2
    fi
    exe="${ACCELENV_PYTHON_EXE:-python}"
    resolved="$(command -v -- "$exe" || true)"
    if [[ -z "$resolved" ]]; then
      echo "accelenv: python-exe '$exe' is not an interpreter on this runner (set up the cell's Python first)" >&2
      exit 2
    fi
    if [[ "$ACCELENV_COMMAND" == "install" ]]; then
      "$accelenv" ci install --cell "$ACCELENV_CELL" --python-exe "$resolved" \
        --workdir "${ACCELENV_WORKDIR:-accelenv-check}" "${github_output[@]}"
      exit 0
    fi
    args=(--cell "$ACCELENV_CELL" --python-exe "$resolved" --checks "${ACCELENV_CHECKS:-detect,smoke}"
          --device "${ACCELENV_DEVICE:-auto}" --workdir "${ACCELENV_WORKDIR:-accelenv-check}")
    if [[ "${ACCELENV_INSTALL:-true}" != "true" ]]; then args+=(--no-install); fi
    if [[ "${ACCELENV_FAIL_ON_SUBMIT:-false}" == "true" ]]; then args+=(--fail-on-submit); fi
    "$accelenv" ci check "${args[@]}" "${github_output[@]}"
    ;;
  *)
    echo "accelenv: command must be matrix, install or check, not '${ACCELENV_COMMAND:-}'" >&2
    exit 2
    ;;
esac

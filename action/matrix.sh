#!/usr/bin/env bash
# The Action's `matrix` step: the CI matrix's include list, for a workflow's strategy.matrix.
#
# Runs the same anywhere (GitHub Actions, another CI, a shell): it reads its inputs from the environment and
# writes `matrix=<json>` to $GITHUB_OUTPUT when that is set, and the JSON to stdout always.
#   ACCELENV_SERVER   an accelenv service: GET /v1/ci-matrix with curl; empty: `accelenv ci matrix` offline
#   ACCELENV_TORCH ACCELENV_PYTHON ACCELENV_FAMILY ACCELENV_BUILD ACCELENV_OS ACCELENV_ARCH ACCELENV_WITH
#   ACCELENV_MODE ACCELENV_FORMAT       the matrix's parameters (empty: the service's default)
#   ACCELENV_SPEC     what pip installs when accelenv is missing and no server is given (default: accelenv)
set -euo pipefail

params=(torch python family build os arch with mode format)
out="$(mktemp)"
trap 'rm -f "$out"' EXIT

if [[ -n "${ACCELENV_SERVER:-}" ]]; then
  args=()
  for name in "${params[@]}"; do
    var="ACCELENV_${name^^}"
    if [[ -n "${!var:-}" ]]; then args+=(--data-urlencode "${name}=${!var}"); fi
  done
  status="$(curl -sS --get --retry 3 --retry-connrefused -o "$out" -w '%{http_code}' "${args[@]}" \
    "${ACCELENV_SERVER%/}/v1/ci-matrix")"
  if [[ "$status" != "200" ]]; then
    echo "accelenv: GET /v1/ci-matrix answered HTTP $status:" >&2
    cat "$out" >&2
    exit 1
  fi
else
  command -v accelenv >/dev/null || python3 -m pip install -q "${ACCELENV_SPEC:-accelenv}"
  args=()
  for name in "${params[@]}"; do
    var="ACCELENV_${name^^}"
    if [[ -n "${!var:-}" ]]; then args+=("--${name}" "${!var}"); fi
  done
  ACCELENV_SERVER= accelenv ci matrix "${args[@]}" --output "$out"
fi

include="$(python3 - "$out" <<'PY'
import json, sys
body = json.load(open(sys.argv[1], encoding="utf-8"))
if not body["include"]:
    reasons = "; ".join(sorted({e["reason"] for e in body["excluded"]})[:5])
    sys.exit("accelenv: the matrix is empty (" + (reasons or "nothing selected") + ")")
print(json.dumps({"include": body["include"]}, separators=(",", ":")))
PY
)"
if [[ -n "${GITHUB_OUTPUT:-}" ]]; then
  echo "matrix=$include" >> "$GITHUB_OUTPUT"
fi
echo "$include"

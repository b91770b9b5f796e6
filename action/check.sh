#!/usr/bin/env bash
# The Action's `check` step for one matrix cell: install plan -> install -> verify-env -> probe -> report.
#
# Runs the same anywhere; inputs from the environment:
#   ACCELENV_CELL      the cell (one object of the matrix's include list; in a workflow: toJSON(matrix))
#   ACCELENV_SERVER    the accelenv service (install plan, report submission, evidence); empty: offline plan,
#                      no submission
#   ACCELENV_TOKEN     a `report` token (from a secret) to submit the probe's report
#   ACCELENV_PYTHON_EXE  the job's Python (default: python3)
#   ACCELENV_INSTALL   true (default): run the cell's install plan; false: write it only
#   ACCELENV_CHECKS    probe groups (default: detect,smoke); ACCELENV_DEVICE (default: auto)
#   ACCELENV_SPEC      what pip installs for accelenv when it is missing (default: accelenv)
#   ACCELENV_WORKDIR   where the plan, report and evidence land (default: ./accelenv-check)
# Writes report-id=, evidence-status= to $GITHUB_OUTPUT when set. Exits non-zero when the environment is not
# the cell's (verify-env names each difference), or the service refuses the report.
set -euo pipefail

: "${ACCELENV_CELL:?ACCELENV_CELL must hold the matrix cell (toJSON(matrix))}"
py="${ACCELENV_PYTHON_EXE:-python3}"
work="${ACCELENV_WORKDIR:-accelenv-check}"
mkdir -p "$work"
printf '%s' "$ACCELENV_CELL" > "$work/cell.json"
server="${ACCELENV_SERVER:-}"
server="${server%/}"

command -v accelenv >/dev/null || "$py" -m pip install -q "${ACCELENV_SPEC:-accelenv}"

field() { python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); v=c.get(sys.argv[2]); print("" if v is None else v)' "$work/cell.json" "$1"; }
torch="$(field torch)"; build="$(field build)"; python="$(field python)"; os="$(field os)"; arch="$(field arch)"
with="$(python3 -c 'import json,sys; p=json.load(open(sys.argv[1]))["pins"]; print(",".join(n for n in p if n!="torch") or "none")' "$work/cell.json")"
echo "::group::accelenv: install plan for torch $torch $build, Python $python, $os-$arch"
if [[ -n "$server" ]]; then
  status="$(curl -sS --get --retry 3 --retry-connrefused -o "$work/install.txt" -w '%{http_code}' \
    --data-urlencode "torch=$torch" --data-urlencode "backend=$build" --data-urlencode "python=$python" \
    --data-urlencode "os=$os" --data-urlencode "arch=$arch" --data-urlencode "with=$with" \
    --data-urlencode "format=pip" "$server/v1/resolve")"
  if [[ "$status" != "200" ]]; then cat "$work/install.txt" >&2; echo "accelenv: no install plan (HTTP $status)" >&2; exit 1; fi
else
  ACCELENV_SERVER= accelenv resolve --torch "$torch" --backend "$build" --python "$python" --os "$os" \
    --arch "$arch" --with "$with" --format pip > "$work/install.txt"
fi
cat "$work/install.txt"
echo "::endgroup::"
if [[ "${ACCELENV_INSTALL:-true}" == "true" ]]; then
  # every line is a pip command or a comment; run each with the job's Python
  while IFS= read -r line; do
    [[ -z "$line" || "$line" == \#* ]] && continue
    eval "\"$py\" -m ${line}"
  done < "$work/install.txt"
fi

echo "::group::accelenv: verify-env"
accelenv verify-env --cell "$work/cell.json" --python-exe "$(command -v "$py")"
echo "::endgroup::"

echo "::group::accelenv: probe (${ACCELENV_CHECKS:-detect,smoke})"
accelenv probe --checks "${ACCELENV_CHECKS:-detect,smoke}" --device "${ACCELENV_DEVICE:-auto}" \
  --python "$(command -v "$py")" --output "$work/report.json" --quiet || probe_status=$?
echo "::endgroup::"
[[ -s "$work/report.json" ]] || { echo "accelenv: the probe wrote no report" >&2; exit 1; }

if [[ -z "$server" || -z "${ACCELENV_TOKEN:-}" ]]; then
  echo "accelenv: no server or token: the report stays in $work/report.json"
  exit "${probe_status:-0}"
fi
status="$(curl -sS --retry 3 --retry-connrefused -o "$work/submitted.json" -w '%{http_code}' -X POST \
  -H "Authorization: Bearer $ACCELENV_TOKEN" -H "Content-Type: application/json" \
  --data-binary "@$work/report.json" "$server/v1/reports")"
if [[ "$status" != "200" && "$status" != "201" ]]; then
  cat "$work/submitted.json" >&2; echo "accelenv: the service refused the report (HTTP $status)" >&2; exit 1
fi
# the cell's evidence as the service now has it (GET /v1/evidence with the stored report's key)
query="$(python3 - "$work/submitted.json" <<'PY'
import json, sys, urllib.parse
key = json.load(open(sys.argv[1]))["cell"]
names = {"torch_version": "torch", "torch_build": "build", "runtime_version": "runtime",
         "driver_version": "driver", "device_arch": "device_arch"}
print(urllib.parse.urlencode({names.get(k, k): v for k, v in key.items() if v is not None}))
PY
)"
curl -sS --fail-with-body -o "$work/evidence.json" "$server/v1/evidence?$query"
read -r report_id evidence_status < <(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["report_id"], json.load(open(sys.argv[2]))["status"])' "$work/submitted.json" "$work/evidence.json")
echo "accelenv: report $report_id stored; the cell's evidence: $evidence_status ($server/v1/evidence?$query)"
if [[ -n "${GITHUB_OUTPUT:-}" ]]; then
  { echo "report-id=$report_id"; echo "evidence-status=$evidence_status"; } >> "$GITHUB_OUTPUT"
fi
exit "${probe_status:-0}"

"""Page load time of `/` (selector) and `/matrix` (heatmap): server time and Chromium's load event.

Reproduce (from the repository root; needs Debian's chromium, `apt-get install -y chromium chromium-driver`):

    .venv/bin/python benchmarks/bench_pages.py --repeat 20

Starts `accelenv serve --port 0` on a fresh SQLite file (as deployed: access log and metrics on), warms each
page once, then for each page:

- server time: ``--repeat`` sequential GETs over loopback with httpx, from sending the request to the last
  byte of the HTML (the page only, not its CSS/JS);
- load event: ``--repeat`` navigations of headless Chromium (a fresh page each time, cache kept as a browser
  would), ``loadEventEnd`` of the navigation timing entry: HTML, CSS, JS and favicon all loaded.

Prints medians and 95th percentiles in milliseconds as one JSON object. Target: load event median ≤ 300 ms for
both pages on the 2-core dev machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from tests.pages.chromium import chromium_path

PAGES = {"selector": "/?torch=2.5&backend=cuda&driver=550.54.15&python=3.12", "matrix": "/matrix"}
TARGET_LOAD_MS = 300.0


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _summary(values: list[float]) -> dict[str, float]:
    return {"median_ms": round(statistics.median(values), 2), "p95_ms": round(_pct(values, 0.95), 2)}


def _serve(tmp: Path) -> tuple[subprocess.Popen[str], str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACCELENV_")}
    env["ACCELENV_DATABASE_URL"] = f"sqlite:///{tmp / 'pages.sqlite3'}"
    log = (tmp / "serve.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli.main", "serve", "--host", "127.0.0.1", "--port", "0"],
        cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, text=True,
    )
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        for line in (tmp / "serve.log").read_text().splitlines():
            if " listening on " in line:
                return proc, line.split(" listening on ", 1)[1].split()[0]
        if proc.poll() is not None:
            raise SystemExit(f"accelenv serve exited: {(tmp / 'serve.log').read_text()[-2000:]}")
        time.sleep(0.2)
    raise SystemExit("accelenv serve did not start in 90 s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=20, help="measurements per page and method")
    args = parser.parse_args()
    browser_path = chromium_path()
    if browser_path is None:
        raise SystemExit("chromium is not installed (apt-get install -y chromium chromium-driver)")
    from playwright.sync_api import sync_playwright

    results: dict[str, dict[str, object]] = {}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        proc, base = _serve(tmp)
        try:
            with httpx.Client(base_url=base, timeout=30) as client, sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=browser_path, args=["--no-sandbox", "--disable-gpu"])
                context = browser.new_context()
                for name, path in PAGES.items():
                    assert client.get(path).status_code == 200
                    server: list[float] = []
                    for _ in range(args.repeat):
                        start = time.perf_counter()
                        res = client.get(path)
                        server.append((time.perf_counter() - start) * 1000)
                        assert res.status_code == 200
                    load: list[float] = []
                    warm = context.new_page()
                    warm.goto(base + path, wait_until="load")
                    warm.close()
                    for _ in range(args.repeat):
                        page = context.new_page()
                        page.goto(base + path, wait_until="load")
                        load.append(page.evaluate(
                            "() => { const n = performance.getEntriesByType('navigation')[0];"
                            " return n.loadEventEnd - n.startTime; }"
                        ))
                        page.close()
                    results[name] = {
                        "path": path, "html_bytes": len(res.content),
                        "server": _summary(server), "load_event": _summary(load),
                    }
                browser.close()
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    worst = max(float(r["load_event"]["median_ms"]) for r in results.values())  # type: ignore[index]
    print(json.dumps({
        "pages": results, "target_load_median_ms": TARGET_LOAD_MS, "meets_target": worst <= TARGET_LOAD_MS,
        "settings": vars(args), "chromium": browser_path, "cpus": os.cpu_count(),
        "load_average": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
    }, indent=2))  # fmt: skip


if __name__ == "__main__":
    main()

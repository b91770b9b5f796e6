"""Record the package-index fixtures under tests/data/index/ (run once, by hand, with network access).

    .venv/bin/python tests/data/index/record.py [--index-url URL] [--cache-dir DIR]

Reads the index pip is configured with (or --index-url), keeps only the files listed in KEEP, and writes
for each project ``pages/<project>.json`` (PEP 691) and ``pages/<project>.html`` (PEP 503) as the index
served them, with every file URL rewritten to ``../../files/<filename>`` (relative to ``/simple/<project>/``,
so the loopback server serves them and no index or file host is kept), plus the real ``METADATA`` of each
kept wheel's headers (the description body dropped) under ``metadata/`` (read with HTTP range requests, never
whole wheels). The loopback server (`tests/index/loopback_index.py`) builds a small real zip per wheel around
that METADATA.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parents[2]))

from compat_service.index.client import IndexClient
from compat_service.index.location import resolve_index
from compat_service.index.page_cache import IndexCache
from compat_service.index.wheel_metadata import WheelRef, read_metadata

# project -> file names kept (a few releases each: old/new patch, new release, free-threaded, yanked, pre, post)
KEEP = {
    "torch": [
        "torch-2.14.0-cp312-cp312-manylinux_2_28_x86_64.whl",
        "torch-2.14.0-cp312-cp312-manylinux_2_28_aarch64.whl",
        "torch-2.14.0-cp312-cp312-win_amd64.whl",
        "torch-2.14.1-cp312-cp312-manylinux_2_28_x86_64.whl",
        "torch-2.14.1-cp312-cp312-win_amd64.whl",
        "torch-2.15.0-cp312-cp312-manylinux_2_28_x86_64.whl",
        "torch-2.15.0-cp312-cp312-manylinux_2_28_aarch64.whl",
        "torch-2.15.0-cp312-cp312-macosx_14_0_arm64.whl",
        "torch-2.15.0-cp314-cp314t-manylinux_2_28_x86_64.whl",
        "torch-2.15.0-cp315-cp315t-manylinux_2_28_x86_64.whl",
    ],
    "triton": [
        "triton-3.9.0-cp312-abi3-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
        "triton-3.9.0-cp315-cp315t-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
    ],
    "torchvision": [
        "torchvision-0.29.1-cp312-cp312-manylinux_2_28_x86_64.whl",
        "torchvision-0.29.2-py3-none-manylinux_2_28_x86_64.whl",
    ],
    "torchaudio": [
        "torchaudio-2.0.0-cp39-cp39-manylinux1_x86_64.whl",
        "torchaudio-2.0.1-cp39-cp39-manylinux1_x86_64.whl",
        "torchaudio-2.11.1-py3-none-manylinux_2_28_x86_64.whl",
    ],
    "torch-npu": [
        "torch_npu-2.12.0.post2-cp311-cp311-manylinux_2_28_x86_64.whl",
        "torch_npu-2.12.0.post3-cp311-cp311-manylinux_2_28_aarch64.whl",
        "torch_npu-2.12.0.post3-cp311-cp311-manylinux_2_28_x86_64.whl",
        "torch_npu-2.13.0rc1-cp311-cp311-manylinux_2_28_aarch64.whl",
        "torch_npu-2.11.0.post3-cp311-cp311-manylinux_2_28_x86_64.whl",
        "torch_npu-2.11.0.post3-cp311-cp311-manylinux_2_28_aarch64.whl",
    ],
    # the ecosystem (resolve --with): exact pins with an abi3 wheel, a yanked release, a range pin with a
    # py39-none wheel, no torch requirement at all, a range with one wheel for every runtime, sdist only
    "vllm": [
        "vllm-0.33.0-cp38-abi3-manylinux_2_28_x86_64.whl",
        "vllm-0.33.0-cp38-abi3-manylinux_2_28_aarch64.whl",
        "vllm-0.33.0.tar.gz",
        "vllm-0.2.1-cp310-cp310-manylinux1_x86_64.whl",
        "vllm-0.2.1.tar.gz",
    ],
    "xformers": [
        "xformers-0.0.34-cp39-abi3-manylinux_2_28_x86_64.whl",
        "xformers-0.0.34-cp39-abi3-win_amd64.whl",
        "xformers-0.0.35-py39-none-manylinux_2_28_x86_64.whl",
        "xformers-0.0.35-py39-none-win_amd64.whl",
    ],
    "torchao": [
        "torchao-0.17.0-cp310-abi3-manylinux_2_24_x86_64.manylinux_2_28_x86_64.whl",
        "torchao-0.17.0-py3-none-any.whl",
    ],
    "bitsandbytes": [
        "bitsandbytes-0.50.2-py3-none-manylinux_2_24_x86_64.whl",
        "bitsandbytes-0.50.2-py3-none-macosx_14_0_arm64.whl",
    ],
    "flash-attn": ["flash_attn-2.8.3.tar.gz", "flash_attn-2.8.3.post2.tar.gz"],
    "vllm-ascend": ["vllm_ascend-0.13.0-cp311-cp311-manylinux_2_24_x86_64.whl", "vllm_ascend-0.13.0.tar.gz"],
}
_HREF = re.compile(r'href="[^"]*/([^/"#]+)(#[^"]*)?"')


def _relative(filename: str) -> str:
    return f"../../files/{filename}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--index-url")
    parser.add_argument("--cache-dir", type=Path)
    parser.add_argument("--project", action="append", help="record only these projects (repeatable)")
    args = parser.parse_args()
    index = resolve_index(args.index_url)
    (ROOT / "pages").mkdir(exist_ok=True)
    (ROOT / "metadata").mkdir(exist_ok=True)
    with httpx.Client(timeout=60, follow_redirects=True) as http, IndexClient(
        cache=IndexCache(args.cache_dir), http=http
    ) as client:
        for project, keep in KEEP.items():
            if args.project and project not in args.project:
                continue
            url = f"{index.url}{project}/"
            data = http.get(url, headers={"Accept": "application/vnd.pypi.simple.v1+json"}).json()
            files = [f for f in data["files"] if f["filename"] in keep]
            missing = set(keep) - {f["filename"] for f in files}
            if missing:
                raise SystemExit(f"{project}: not on the index: {sorted(missing)}")
            for f in files:
                if not f["filename"].endswith(".whl"):
                    f["url"] = _relative(f["filename"])  # an sdist: its metadata is never read
                    continue
                ref = WheelRef(f["filename"], f["url"], f["hashes"].get("sha256"), None, f.get("size"))
                raw, _how = read_metadata(client, ref)
                # the headers only: the long description after the first blank line is not a fact we read
                (ROOT / "metadata" / f"{f['filename']}.METADATA").write_bytes(raw.split(b"\n\n", 1)[0] + b"\n")
                f["url"] = _relative(f["filename"])
            versions = sorted(
                {v for v in data.get("versions", []) if any(f"-{v}-" in k or k.endswith(f"-{v}.tar.gz") for k in keep)}
            )
            page = {"meta": data["meta"], "name": data["name"], "versions": versions, "files": files}
            (ROOT / "pages" / f"{project}.json").write_text(json.dumps(page, indent=1) + "\n")
            html = http.get(url, headers={"Accept": "text/html"}).text
            lines = []
            for line in html.splitlines():
                match = _HREF.search(line)
                if match is None:
                    lines.append(line)
                elif match.group(1) in keep:
                    lines.append(_HREF.sub(lambda m: f'href="{_relative(m.group(1))}{m.group(2) or ""}"', line))
            (ROOT / "pages" / f"{project}.html").write_text("\n".join(lines) + "\n")
            print(f"{project}: {len(files)} files")


if __name__ == "__main__":
    main()

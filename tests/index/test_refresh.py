"""`matrix refresh` against a real HTTP index on loopback serving recorded pages and metadata."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from cli import matrix_cmd
from compat_service.index.errors import IndexResponseError, IndexUnreachableError
from compat_service.index.generated import load_facts
from compat_service.index.refresh import run_refresh
from tests.index.conftest import client, location
from tests.index.loopback_index import LoopbackIndex, build_wheel

TODAY = dt.date(2026, 12, 1)
runner = CliRunner()
app = typer.Typer()
matrix_cmd.register(app)


def refresh(index: LoopbackIndex, matrix: Path, cache: Path | None = None, **kwargs):
    kwargs.setdefault("variants", False)
    with client(cache) as c:
        return run_refresh(c, location(index), matrix, today=TODAY, **kwargs)


def wheels(matrix: Path, package: str, version: str) -> set[tuple[str, str]]:
    facts = load_facts(matrix, package)
    assert facts is not None
    release = facts.release(version)
    assert release is not None
    return {(w.platform, w.python) for w in release.wheels}


def test_json_page_gives_releases_wheels_runtimes_and_pins(index: LoopbackIndex, matrix: Path) -> None:
    result = refresh(index, matrix)
    assert result.written and result.counts()["removed"] == 0
    torch = load_facts(matrix, "torch")
    assert torch is not None and torch.index == index.simple and torch.retrieved == TODAY
    assert [r.version for r in torch.releases] == ["2.14.0", "2.14.1", "2.15.0"]
    latest = torch.release("2.15.0")
    assert latest is not None
    assert latest.first_upload == dt.datetime(2026, 10, 28, 15, 16, 30, tzinfo=dt.timezone.utc) or latest.first_upload
    assert latest.requires_python == ">=3.11"
    assert {("linux-x86_64", "3.14t"), ("linux-x86_64", "3.15t"), ("macos-arm64", "3.12")} <= wheels(
        matrix, "torch", "2.15.0"
    )
    runtimes = {r.platform: (r.family, r.label, r.version) for r in latest.runtimes}
    assert runtimes["linux-x86_64"] == ("cuda", "cu132", "13.2.2")
    assert runtimes["linux-aarch64"] == ("cuda", "cu132", "13.2.2")
    assert runtimes["macos-arm64"] == ("cpu", "cpu", None)
    triton = [r for r in latest.requirements if r.name == "triton" and r.platform == "linux-x86_64"]
    assert [(r.specifier, r.marker) for r in triton] == [
        ("~=3.9.0", 'platform_system == "Linux" and python_version < "3.16"')
    ]
    old = torch.release("2.14.0")
    assert old is not None
    assert {r.platform: r.version for r in old.runtimes}["linux-x86_64"] == "13.0.3"


def test_free_threaded_abi3_yanked_pre_and_post_releases(index: LoopbackIndex, matrix: Path) -> None:
    refresh(index, matrix)
    assert wheels(matrix, "triton", "3.9.0") == {("linux-x86_64", "3.12+"), ("linux-x86_64", "3.15t")}
    audio = load_facts(matrix, "torchaudio")
    assert audio is not None
    yanked = audio.release("2.0.0")
    assert yanked is not None and yanked.yanked and yanked.wheels == []
    assert yanked.yanked_files == ["torchaudio-2.0.0-cp39-cp39-manylinux1_x86_64.whl"]
    assert yanked.yanked_reason == "Contains an incorrect torch dependency"
    assert wheels(matrix, "torchvision", "0.29.2") == {("linux-x86_64", "any")}
    npu = load_facts(matrix, "torch-npu")
    assert npu is not None
    rc = npu.release("2.13.0rc1")
    assert rc is not None and rc.prerelease and not rc.postrelease
    post = npu.release("2.11.0.post3")
    assert post is not None and post.postrelease and not post.prerelease
    pins = {r.platform: r.specifier for r in post.requirements if r.name == "torch"}
    assert pins == {"linux-x86_64": "==2.11.0+cpu", "linux-aarch64": "==2.11.0"}


def test_html_only_index_gives_the_same_facts(index: LoopbackIndex, matrix: Path, tmp_path: Path) -> None:
    refresh(index, matrix)
    json_facts = {p: load_facts(matrix, p) for p in ("torch", "triton", "torch-npu", "torchaudio")}
    index.state.json_enabled = False
    other = tmp_path / "html"
    import shutil

    shutil.copytree(matrix, other)
    assert {ct for _p, ct in index.state.pages_served} == {"application/vnd.pypi.simple.v1+json"}
    for file in (other / "index").glob("t*.yaml"):
        file.unlink()
    served = len(index.state.pages_served)
    refresh(index, other)
    assert {ct for _p, ct in index.state.pages_served[served:]} == {"text/html; charset=utf-8"}
    for package, facts in json_facts.items():
        html_facts = load_facts(other, package)
        assert html_facts is not None and facts is not None
        # PEP 503 pages carry no upload time or size: everything else is the same
        assert [r.model_copy(update={"first_upload": None}) for r in html_facts.releases] == [
            r.model_copy(update={"first_upload": None}) for r in facts.releases
        ]


def test_metadata_comes_from_range_reads_of_the_zip_directory(index: LoopbackIndex, matrix: Path) -> None:
    result = refresh(index, matrix)
    assert set(result.metadata_reads) == {"range"}
    file = "torch-2.15.0-cp312-cp312-manylinux_2_28_x86_64.whl"
    requests = index.state.requests_to(f"/files/{file}")
    assert requests and all(ranged is not None and status == 206 for _m, _p, ranged, status in requests)
    assert index.state.bytes_sent[f"/files/{file}"] < len(build_wheel(file)) / 2


def test_pep658_metadata_file_is_used_where_the_page_offers_one(index: LoopbackIndex, matrix: Path) -> None:
    file = "torch-2.15.0-cp312-cp312-manylinux_2_28_x86_64.whl"
    index.state.pep658 = {file}
    result = refresh(index, matrix, packages=["torch"])
    assert result.metadata_reads.get("pep658") == 1
    assert index.state.requests_to(f"/files/{file}.metadata")
    assert not index.state.requests_to(f"/files/{file}") or all(
        p.endswith(".metadata") for _m, p, _r, _s in index.state.requests_to(f"/files/{file}")
    )


def test_new_release_and_new_patch_are_reported_by_check(index: LoopbackIndex, matrix: Path) -> None:
    index.state.hidden = {"torch": {"2.14.1", "2.15.0"}}
    refresh(index, matrix, packages=["torch"])
    before = (matrix / "index" / "torch.yaml").read_text()
    assert "2.15.0" not in before
    index.state.hidden = {}
    args = ["matrix", "refresh", "--check", "--index-url", index.simple, "--path", str(matrix), "--no-cache",
            "--no-variants", "--package", "torch"]
    result = runner.invoke(app, args)
    assert result.exit_code == 11, result.output
    assert "+ torch 2.15.0: new release, first upload 2026-10-28" in result.stdout
    assert "+ torch 2.14.1: new release" in result.stdout
    assert "error: matrix-out-of-date" in result.stderr
    assert (matrix / "index" / "torch.yaml").read_text() == before  # --check writes nothing
    assert runner.invoke(app, args[:2] + args[3:]).exit_code == 0
    assert runner.invoke(app, args).exit_code == 0


def test_a_file_yanked_later_shows_as_a_removed_wheel(index: LoopbackIndex, matrix: Path) -> None:
    refresh(index, matrix)
    index.state.yanked = {"torch-2.14.0-cp312-cp312-win_amd64.whl"}
    result = refresh(index, matrix, write=False)
    lines = result.diffs["torch"].lines()
    assert lines == ["- torch 2.14.0 wheel windows-x86_64 Python 3.12: torch-2.14.0-cp312-cp312-win_amd64.whl",
                     "- torch 2.14.0 default-index runtime on windows-x86_64: cpu"][::-1]


def test_conditional_requests_answered_304_reuse_the_cache(index: LoopbackIndex, matrix: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = refresh(index, matrix, cache)
    second = refresh(index, matrix, cache)
    assert first.stats["not_modified"] == 0
    assert second.stats["not_modified"] == len(first.facts) == 11  # one per project page
    assert set(second.metadata_reads) == {"cache"}
    assert second.stats["range_requests"] == 0 and not second.written and not second.changed
    # the recorded fixtures have 11 of refresh.yaml's projects; the others answer 404 each time
    pages = [entry for entry in index.state.log if entry[1].startswith("/simple/") and entry[3] != 404]
    assert [status for *_x, status in pages[-11:]] == [304] * 11


def test_a_project_the_index_lacks_is_a_notice_and_keeps_its_facts(index: LoopbackIndex, matrix: Path) -> None:
    config = matrix / "index" / "refresh.yaml"
    config.write_text(config.read_text().replace(
        "  - {name: triton,", '  - {name: not-on-this-index, since: "1.0", requirements: []}\n  - {name: triton,'
    ))
    result = refresh(index, matrix)
    assert any(n.startswith("not-on-this-index: the index has no such project (404)") for n in result.notices)
    assert "triton" in result.facts


def test_a_wheel_missing_from_the_file_host_is_a_clear_error(index: LoopbackIndex, matrix: Path) -> None:
    (matrix / "index").mkdir(exist_ok=True)
    index.state.pep658 = set()
    # the server 404s every file whose recorded metadata is absent: make torch's newest one absent
    from tests.index import loopback_index as served

    missing = served.FIXTURES / "metadata" / "torch-2.15.0-cp312-cp312-macosx_14_0_arm64.whl.METADATA"
    kept = missing.read_bytes()
    missing.unlink()
    try:
        with pytest.raises(IndexResponseError, match="HTTP 404 to a range request"):
            refresh(index, matrix, packages=["torch"])
    finally:
        missing.write_bytes(kept)
    assert not (matrix / "index" / "torch.yaml").exists()  # nothing written


def test_a_failing_server_is_retried(index: LoopbackIndex, matrix: Path) -> None:
    index.state.fail = {"/simple/torch/": 2}
    result = refresh(index, matrix, packages=["torch"])
    assert result.stats["retries"] == 2
    assert "torch" in result.facts


def test_a_server_that_keeps_failing_gives_up_with_exit_6(index: LoopbackIndex, matrix: Path) -> None:
    index.state.fail = {"/simple/torch/": 100}
    with pytest.raises(IndexUnreachableError, match="HTTP 503"):
        refresh(index, matrix, packages=["torch"])
    result = runner.invoke(app, ["matrix", "refresh", "--index-url", index.simple, "--path", str(matrix),
                                 "--no-cache", "--no-variants", "--package", "torch"])
    assert result.exit_code == 6
    assert "error: index-unreachable" in result.stderr and "Traceback" not in result.output
    assert not (matrix / "index" / "torch.yaml").exists()


def test_a_slow_server_times_out_and_the_retry_succeeds(index: LoopbackIndex, matrix: Path) -> None:
    index.state.slow = {"/simple/triton/": (1.5, 1)}
    with client(None, timeout=0.5) as c:
        result = run_refresh(c, location(index), matrix, packages=["triton"], variants=False, today=TODAY)
    assert result.stats["retries"] == 1
    assert result.facts["triton"].release("3.9.0") is not None


def test_variant_indexes_are_read_and_an_unreachable_one_is_unknown(index: LoopbackIndex, matrix: Path) -> None:
    urls = {label: index.variant(label) for label in ("cpu", "cu130", "cu126")}
    urls["cu132"] = "http://127.0.0.1:9/whl/cu132"  # the discard port: nothing listens
    with client(None) as c:
        result = run_refresh(c, location(index), matrix, packages=["torch"], variants=True,
                             variant_urls=urls, today=TODAY)
    by_label = {v.label: v for v in result.facts["torch"].variant_indexes}
    cpu = by_label["cpu"]
    assert cpu.status == "read"
    assert {(w.platform, w.python) for w in cpu.releases["2.12.0"]} == {
        ("linux-x86_64", "3.11"), ("linux-aarch64", "3.11"), ("windows-x86_64", "3.11")
    }
    assert {(w.platform, w.python) for w in by_label["cu130"].releases["2.13.0"]} >= {("linux-aarch64", "3.14t")}
    assert by_label["cu126"].status == "absent"
    assert by_label["cu132"].status == "unreachable"
    assert any("could not be reached (cu132" in n for n in result.notices)


def test_check_reports_a_curated_value_the_index_contradicts(index: LoopbackIndex, matrix: Path) -> None:
    refresh(index, matrix, packages=["torch"])
    releases = matrix / "torch_releases.yaml"
    text = releases.read_text()
    assert '      - version: "2.14.0"\n        release_date: null' in text
    releases.write_text(text.replace('      - version: "2.14.0"\n        release_date: null',
                                     '      - version: "2.14.0"\n        release_date: 2026-09-03\n'
                                     '        release_date_source: [release_md]').replace(
        '2026-09-03\n        release_date_source: [release_md]\n        release_date_source: []',
        '2026-09-03\n        release_date_source: [release_md]'))
    result = runner.invoke(app, ["matrix", "refresh", "--check", "--index-url", index.simple, "--path", str(matrix),
                                 "--no-cache", "--no-variants", "--package", "torch"])
    assert result.exit_code == 11, result.output
    marked = [line for line in result.stdout.splitlines() if line.startswith("! ")]
    assert len(marked) == 1 and "release_date: conflicts with the package index: 2026-09-03" in marked[0]
    assert "1 curated value(s) contradict the index" in result.stdout


def test_ecosystem_projects_exact_and_range_pins_no_requirement_sdist_only_and_yanked(
    index: LoopbackIndex, matrix: Path
) -> None:
    packages = ["vllm", "vllm-ascend", "xformers", "torchao", "bitsandbytes", "flash-attn"]
    result = refresh(index, matrix, packages=packages)
    assert result.counts()["removed"] == 0
    vllm = load_facts(matrix, "vllm")
    assert vllm is not None and vllm.index == index.simple
    release = vllm.release("0.33.0")
    assert release is not None and not release.yanked
    pins = {(r.platform, r.name): r.specifier for r in release.requirements}
    for platform in ("linux-x86_64", "linux-aarch64"):  # exact pins of torch and both companions
        assert pins[(platform, "torch")] == "==2.14.0"
        assert pins[(platform, "torchvision")] == "==0.29.0"
        assert pins[(platform, "torchaudio")] == "==2.11.0"
    assert wheels(matrix, "vllm", "0.33.0") == {("linux-x86_64", "3.8+"), ("linux-aarch64", "3.8+")}
    assert release.requires_python == "<3.15,>=3.11" and release.sdist == "vllm-0.33.0.tar.gz"
    assert release.runtimes == []  # the runtime is the pinned torch's build, not a requirement of vllm's own
    yanked = vllm.release("0.2.1")
    assert yanked is not None and yanked.yanked and yanked.wheels == [] and yanked.requirements == []
    assert yanked.yanked_reason == "A bug in tensor parallelism support."
    xformers = load_facts(matrix, "xformers")
    assert xformers is not None
    exact, ranged = xformers.release("0.0.34"), xformers.release("0.0.35")
    assert exact is not None and ranged is not None
    assert {r.platform: r.specifier for r in exact.requirements if r.name == "torch"} == {
        "linux-x86_64": "==2.10.0", "windows-x86_64": "==2.10.0"}
    assert {r.platform: r.specifier for r in ranged.requirements if r.name == "torch"} == {
        "linux-x86_64": ">=2.10", "windows-x86_64": ">=2.10"}
    assert wheels(matrix, "xformers", "0.0.35") == {("linux-x86_64", "3.9+"), ("windows-x86_64", "3.9+")}
    torchao = load_facts(matrix, "torchao")
    assert torchao is not None
    no_pin = torchao.release("0.17.0")
    assert no_pin is not None and no_pin.wheels and no_pin.requirements == []  # declares no torch at all
    bnb = load_facts(matrix, "bitsandbytes")
    assert bnb is not None
    assert {r.platform: r.specifier for r in bnb.release("0.50.2").requirements} == {  # type: ignore[union-attr]
        "linux-x86_64": "<3,>=2.4", "macos-arm64": "<3,>=2.4"}
    flash = load_facts(matrix, "flash-attn")
    assert flash is not None
    assert [(r.version, r.sdist, r.wheels) for r in flash.releases] == [
        ("2.8.3", "flash_attn-2.8.3.tar.gz", []), ("2.8.3.post2", "flash_attn-2.8.3.post2.tar.gz", [])]
    ascend = load_facts(matrix, "vllm-ascend")
    assert ascend is not None
    assert {r.name: r.specifier for r in ascend.release("0.13.0").requirements} == {  # type: ignore[union-attr]
        "torch": "==2.8.0", "torch-npu": "==2.8.0.post2", "torchvision": ""}
    # an sdist-only project costs its page and no metadata read
    assert not [entry for entry in index.state.log if "flash_attn" in entry[1] and entry[1].startswith("/files/")]

"""docker/: the compose file validates, and the image and entrypoint name only things that exist."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess

import pytest
import yaml
from typer.testing import CliRunner

from cli.main import app
from tests.conftest import REPO_ROOT

DOCKER = REPO_ROOT / "docker"


@pytest.mark.skipif(
    shutil.which("docker-compose") is None,
    reason="docker-compose is not installed (apt-get install docker-compose)",
)
def test_compose_file_validates_with_healthchecks() -> None:
    out = subprocess.run(
        ["docker-compose", "-f", str(DOCKER / "compose.yaml"), "config"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    config = yaml.safe_load(out.stdout)
    db, service = config["services"]["db"], config["services"]["service"]
    assert "pg_isready" in " ".join(db["healthcheck"]["test"])
    assert "/readyz" in " ".join(service["healthcheck"]["test"])
    assert service["depends_on"]["db"]["condition"] == "service_healthy"
    assert service["environment"]["ACCELENV_DATABASE_URL"].startswith("postgresql+psycopg://")
    assert service["build"]["dockerfile"] == "docker/Dockerfile"


def test_dockerfile_copies_only_existing_paths() -> None:
    text = (DOCKER / "Dockerfile").read_text()
    copies = [shlex.split(line)[1:-1] for line in text.splitlines() if line.startswith("COPY")]
    sources = [src for args in copies for src in args if not src.startswith("--")]
    assert sources
    for src in sources:
        assert (REPO_ROOT / src).exists(), f"Dockerfile copies {src}, which does not exist"


def test_entrypoint_waits_migrates_loads_then_serves() -> None:
    script = DOCKER / "entrypoint.sh"
    assert script.stat().st_mode & 0o111, "entrypoint.sh must be executable"
    assert subprocess.run(["sh", "-n", str(script)], check=False).returncode == 0
    commands = re.findall(r"^(?:exec )?accelenv ([a-z]+(?: [a-z]+)?)", script.read_text(), flags=re.M)
    assert commands == ["db wait", "db upgrade", "db load", "serve"]
    runner = CliRunner()
    for command in commands:
        res = runner.invoke(app, [*command.split(), "--help"])
        assert res.exit_code == 0, f"`accelenv {command}` does not exist: {res.output}"

"""Run the service under uvicorn with the socket bound first, so every worker can name its real URL.

`accelenv serve` calls `run`: it binds the listening socket itself (``--port 0`` becomes a real port),
hands the URL to the workers in ``ACCELENV_LISTEN_URL`` (their start-up line names it) and then runs one
uvicorn server on that socket, or uvicorn's worker supervisor for ``--workers N``. With several workers it
points prometheus-client's multiprocess mode at a private directory (unless ``PROMETHEUS_MULTIPROC_DIR``
is set), so ``/metrics`` adds up every worker.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile

APP = "compat_service.api.app:app_from_env"


def run(host: str, port: int, workers: int) -> None:
    import uvicorn
    from uvicorn.supervisors import Multiprocess

    config = uvicorn.Config(
        APP, factory=True, host=host, port=port, workers=workers, log_level="warning", access_log=False,
        # malformed HTTP gets the API's JSON error shape, not uvicorn's plain text (by its import string:
        # the cli never imports the api)
        http="compat_service.api.server.http_protocol:JsonErrorsHttpToolsProtocol",
    )
    sock = config.bind_socket()
    bound_host, bound_port = sock.getsockname()[:2]
    shown = f"[{bound_host}]" if ":" in bound_host else bound_host
    os.environ["ACCELENV_LISTEN_URL"] = f"http://{shown}:{bound_port}"
    metrics_dir = None
    if workers > 1 and not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        metrics_dir = tempfile.mkdtemp(prefix="accelenv-metrics-")
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = metrics_dir
    try:
        if workers > 1:
            Multiprocess(config, sockets=[sock]).run()
            return
        server = uvicorn.Server(config)
        try:
            server.run(sockets=[sock])
        except KeyboardInterrupt:
            pass
        if not server.started:
            sys.exit(3)  # uvicorn's STARTUP_FAILURE: the app refused to start and said why
    finally:
        sock.close()
        if metrics_dir is not None:
            shutil.rmtree(metrics_dir, ignore_errors=True)

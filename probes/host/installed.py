"""What is installed in this interpreter, for `accelenv verify-env`: run as a script in the job's Python.

    python -I probes/host/installed.py NAME [NAME ...]   ->  one JSON object on stdout

Standard library + torch (imported inside a function) only, Python 3.8+, like every probe. It reports:

- ``python``: ``3.11`` (``3.13t`` for a free-threaded build) and the executable;
- ``packages``: each named distribution's installed version from its metadata (null: not installed);
- ``torch``: ``__version__``, the build constants ``version.cuda`` / ``version.hip`` / ``version.xpu``, and
  whether a device answers (``cuda.is_available()``), or the import's failure;
- ``loaded``: the CUDA / ROCm runtime libraries the process mapped after importing torch (Linux: from
  ``/proc/self/maps``; the pip wheels load the runtime of the ``nvidia-*`` / ROCm packages they depend on),
  so a runtime that does not match the build shows.

Nothing here raises: a missing package is null, a torch that fails to import is ``{"error": ...}``.
"""

import json
import os
import re
import sys
import sysconfig

_RUNTIME_LIBS = re.compile(r"/(libcudart\.so[.\d]*|libamdhip64\.so[.\d]*|libze_loader\.so[.\d]*)$")


def python_minor():
    free_threaded = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
    return "{}.{}{}".format(sys.version_info[0], sys.version_info[1], "t" if free_threaded else "")


def package_versions(names):
    try:
        from importlib import metadata
    except ImportError:  # pragma: no cover - Python < 3.8
        return {name: None for name in names}
    out = {}  # type: dict
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def torch_facts():
    try:
        import torch
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
    version = getattr(torch, "version", None)
    facts = {
        "version": str(torch.__version__),
        "cuda": getattr(version, "cuda", None),
        "hip": getattr(version, "hip", None),
        "xpu": getattr(version, "xpu", None),
        "device": None,
    }
    try:
        if facts["cuda"] or facts["hip"]:
            facts["device"] = bool(torch.cuda.is_available())
        elif facts["xpu"] and hasattr(torch, "xpu"):
            facts["device"] = bool(torch.xpu.is_available())
    except Exception as exc:
        facts["device_error"] = f"{type(exc).__name__}: {exc}"
    return facts


def loaded_runtimes():
    """The runtime libraries mapped into this process (after torch's import), by file name."""
    found = []
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                match = _RUNTIME_LIBS.search(line.strip())
                if match and match.group(1) not in found:
                    found.append(match.group(1))
    except OSError:
        return None  # not Linux, or no /proc: unknown, not "none loaded"
    return found


def collect(names):
    facts = {
        "python": python_minor(),
        "executable": os.path.basename(sys.executable),
        "packages": package_versions(names),
    }
    facts["torch"] = torch_facts() if "torch" in names else None
    facts["loaded"] = loaded_runtimes()
    return facts


if __name__ == "__main__":
    sys.stdout.write(json.dumps(collect(sys.argv[1:])) + "\n")

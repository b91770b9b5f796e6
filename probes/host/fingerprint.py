"""A stable, salted host fingerprint: counts distinct hosts without identifying them.

sha256 over a random per-install salt (kept in the user's config directory) and the machine id. Neither
the hostname nor the user name goes in. Without a writable config directory the salt is per run, so the
fingerprint is not stable; the report says so in ``environment.extra.fingerprint_stable``.
"""

import hashlib
import os
import secrets
import sys

SALT_FILE = "probe-salt"
MACHINE_ID_FILES = ("/etc/machine-id", "/var/lib/dbus/machine-id")


def config_dir():
    """ACCELENV_CONFIG_DIR, else the platform's per-user config directory + 'accelenv'."""
    explicit = os.environ.get("ACCELENV_CONFIG_DIR")
    if explicit:
        return explicit
    if sys.platform.startswith("win"):
        base = os.environ.get("APPDATA") or os.path.expanduser("~")
    elif sys.platform == "darwin":
        base = os.path.expanduser("~/Library/Application Support")
    else:
        base = os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")
    return os.path.join(base, "accelenv")


def _load_or_create_salt(directory):
    path = os.path.join(directory, SALT_FILE)
    try:
        with open(path, "r") as handle:
            salt = handle.read().strip()
        if len(salt) >= 32:
            return salt, True
    except OSError:
        pass
    salt = secrets.token_hex(32)
    try:
        os.makedirs(directory, exist_ok=True)
        # O_EXCL: two probes racing keep whichever salt landed first.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(salt + "\n")
        return salt, True
    except FileExistsError:
        return _load_or_create_salt(directory)
    except OSError:
        return salt, False


def _machine_id():
    for path in MACHINE_ID_FILES:
        try:
            with open(path, "r") as handle:
                value = handle.read().strip()
            if value:
                return value
        except OSError:
            continue
    if sys.platform.startswith("win"):
        try:
            import winreg

            key = winreg.OpenKey(winreg.HKEY_LOCAL_MACHINE, r"SOFTWARE\Microsoft\Cryptography")
            return str(winreg.QueryValueEx(key, "MachineGuid")[0])
        except OSError:
            return ""
    return ""


def host_fingerprint():
    """Return (hex digest, stable: bool)."""
    salt, stable = _load_or_create_salt(config_dir())
    digest = hashlib.sha256(("accelenv-host-v1\0%s\0%s" % (salt, _machine_id())).encode("utf-8")).hexdigest()
    return digest, stable

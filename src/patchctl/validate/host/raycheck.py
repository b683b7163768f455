"""Preflight rows for the Ray a host will run: can it keep strangers out, and where it listens.

Read from the installed distribution's metadata, never by importing Ray (a preflight must not
pay for Ray's import, nor run code of a Ray it is about to refuse).
"""

from __future__ import annotations

from importlib import metadata
from typing import Any

#: the first Ray whose token authentication (RAY_AUTH_MODE=token) covers every entry point
#: validate opens: GCS, raylets, workers. Below it the token is silently ignored.
TOKEN_AUTH_SINCE = (2, 52)
#: what Ray binds on every interface whatever --node-ip-address says (true of every Ray up to
#: the newest tested, 2.60); the ports patchctl chooses itself are bound on the node's address
ALL_INTERFACES = (
    "GCS (the head's ray_port)",
    "raylet node manager and object manager (random ports)",
    "worker processes (10002-19999)",
)


def _version(text: str) -> tuple[int, int]:
    parts = [*text.split("."), "0"][:2]
    try:
        return int(parts[0]), int("".join(c for c in parts[1] if c.isdigit()) or 0)
    except ValueError:
        return 0, 0


def _row(check: str, status: str, value: str, fix: str = "") -> dict[str, str]:
    return {"check": check, "status": status, "value": value, "fix": fix}


def rows(request: dict[str, Any]) -> list[dict[str, str]]:
    """``ray_auth``: Ray's version against :data:`TOKEN_AUTH_SINCE` (a warning, not a refusal,
    with ``--insecure-ray``); ``ray_listen``: what that Ray binds on every interface. Both are
    skipped for a run that starts no Ray (``--profile health``, issue 41 req 9): an older Ray,
    or none, keeps no stranger in or out of a run that has no Ray of its own."""
    if not request.get("starts_ray", True):
        why = "left out (profile health starts no Ray)"
        return [_row("ray_auth", "skip", why), _row("ray_listen", "skip", why)]
    insecure = bool(request.get("insecure_ray"))
    try:
        version = metadata.version("ray")
    except metadata.PackageNotFoundError:
        return [
            _row(
                "ray_auth",
                "fail",
                "Ray is not installed for this interpreter",
                "pip install 'ray>=2.52' into the cluster's python",
            )
        ]
    need = ".".join(map(str, TOKEN_AUTH_SINCE))
    if _version(version) < TOKEN_AUTH_SINCE:
        value = f"Ray {version} ignores the run's token: anyone who reaches its ports can run code as this user"
        if insecure:
            auth = _row(
                "ray_auth",
                "warn",
                value + " (--insecure-ray: accepted, recorded in the report)",
                f"pip install 'ray>={need}' into the cluster's python",
            )
        else:
            auth = _row(
                "ray_auth",
                "fail",
                value,
                f"pip install 'ray>={need}' into the cluster's python; or, on a "
                "cluster firewalled from everyone else, pass --insecure-ray",
            )
    else:
        auth = _row("ray_auth", "pass", f"Ray {version} enforces the run's token (>= {need})")
    port = request.get("ray_port")
    listen = _row(
        "ray_listen",
        "warn",
        f"Ray {version} binds on all interfaces: "
        + "; ".join(ALL_INTERFACES)
        + (f" (GCS port {port})" if port and request.get("head") else ""),
        "firewall these ports to the cluster's hosts; the token guards them (README: What listens where)",
    )
    return [auth, listen]

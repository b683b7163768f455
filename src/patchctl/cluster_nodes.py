"""A cluster host's ``validate`` node settings (address, ifname, gpus, ray_port, env), checked.

Kept apart from clusters.py, which reads the inventory: these values reach Ray's and NCCL's
command lines and every process validate starts on the host, so each is checked word by word,
as written in the host's own table or, failing that, the cluster's, and named by that key.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from patchctl.errors import ManifestError

#: what the node settings may hold: an address or interface name never starts an option or
#: carries a shell metacharacter (they reach ray's and NCCL's command lines)
_NODE_WORD = re.compile(r"[A-Za-z0-9_.:%-]+\Z")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def node_settings(raw: dict[str, Any], host: dict[str, Any], file: Path, prefix: str, where: str) -> dict[str, Any]:
    """A host's validate settings: its own keys, else the cluster's; each checked where it was written."""
    out: dict[str, Any] = {}
    for key in ("address", "ifname", "gpus", "ray_port"):
        src, at = (host, where) if key in host else (raw, prefix)
        if key not in src:
            continue
        value = src[key]
        if (isinstance(value, str) and not _NODE_WORD.match(value)) or (
            isinstance(value, str) and value.startswith("-")
        ):
            raise ManifestError(
                file, at + key, f"{value!r} is not an address or interface name", 'write e.g. "10.0.0.2" or "eth0"'
            )
        if (key == "gpus" and value < 0) or (key == "ray_port" and not 1 <= value <= 65535):
            raise ManifestError(
                file,
                at + key,
                f"{value} is out of range",
                "write 0 or more" if key == "gpus" else "write a port between 1 and 65535",
            )
        out[key] = value
    env = dict(raw.get("env", {}))
    for k, v in host.get("env", {}).items():
        check_entry(file, f"{where}env.", k, v, variable=True)
        env[k] = v
    visible = env.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and "gpus" in out and out["gpus"] != len([d for d in visible.split(",") if d.strip()]):
        raise ManifestError(
            file,
            f"{where}gpus",
            f"{out['gpus']} GPUs, but CUDA_VISIBLE_DEVICES={visible!r} shows "
            f"{len([d for d in visible.split(',') if d.strip()])}",
            "make the two agree",
        )
    return {**out, "env": env}


def check_entry(file: Path, table: str, name: str, value: Any, *, variable: bool) -> None:
    """One entry of an ``env`` table (``variable``: its name must be a shell variable's, as the
    rendered env file and ``export`` need) or of ``paths``: a string value. ``table`` is the
    table's key with its dot, e.g. ``clusters.c.env.``, so the message names the entry."""
    if variable and not _ENV_NAME.match(name):
        raise ManifestError(
            file,
            f"{table}{name}",
            "is not a shell variable name",
            "use letters, digits and _ (not starting with a digit)",
        )
    if not isinstance(value, str):
        raise ManifestError(file, f"{table}{name}", f"expected a string, got {type(value).__name__}", "quote the value")

"""Proof that the run's cluster refuses a caller without its token, asked from the head.

Two strangers are sent at the GCS, each a fresh interpreter whose environment holds no token
and says ``RAY_AUTH_MODE=disabled`` (so no ``~/.ray/auth_token`` is picked up either): a Ray
driver that tries to run a task, and a raw GCS client call (``internal_kv_keys``). Each ends
``refused`` only when Ray said why (an authentication error), ``accepted`` when the call went
through, else ``unknown``: a refusal for another reason (a network error) proves nothing.
On a Ray below 2.52 the token is silently ignored and both are accepted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

_DRIVER = """
import json, logging, os, sys
try:
    import ray
    ray.init(address=sys.argv[1], log_to_driver=False, logging_level=logging.ERROR, configure_logging=False)
    pid = ray.get(ray.remote(num_cpus=0)(lambda: os.getpid()).remote(), timeout=30)
    print(json.dumps({"accepted": f"a driver without the token ran a task (pid {pid})"}))
except BaseException as exc:
    print(json.dumps({"error": " | ".join(repr(e) for e in (exc, exc.__cause__, exc.__context__) if e)}))
"""
_RAW = """
import json, sys
try:
    from ray._raylet import GcsClient
    keys = GcsClient(address=sys.argv[1]).internal_kv_keys(b"", None, timeout=10)
    print(json.dumps({"accepted": f"a raw GCS call without the token listed {len(keys)} key(s)"}))
except BaseException as exc:
    print(json.dumps({"error": repr(exc)}))
"""
#: what Ray says when it refuses a caller for its token
_AUTH_WORDS = ("InvalidAuthToken", "Unauthenticated", "AuthenticationError")


def stranger_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH")}
    # the driver gives up on the GCS after ~2 s instead of Ray's 20 retries
    return {**env, "RAY_AUTH_MODE": "disabled", "RAY_gcs_server_port_wait_time_s": "2"}


def start(gcs: str) -> dict[str, subprocess.Popen[str]]:
    """Both strangers, running (they take a few seconds: started beside the node probes)."""
    return {
        name: subprocess.Popen(
            [sys.executable, "-c", code, gcs],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=stranger_env(),
        )
        for name, code in (("driver", _DRIVER), ("gcs", _RAW))
    }


def verdicts(running: dict[str, subprocess.Popen[str]], timeout: float = 90.0) -> dict[str, dict[str, str]]:
    """``{"driver": {"outcome", "detail"}, "gcs": {...}}`` once both have ended."""
    out = {}
    for name, p in running.items():
        try:
            text, _ = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            text, _ = p.communicate()
        out[name] = judge(text)
    return out


def judge(text: str) -> dict[str, str]:
    lines = [ln for ln in text.splitlines() if ln.startswith("{")]
    try:
        said: dict[str, Any] = json.loads(lines[-1]) if lines else {}
    except ValueError:
        said = {}
    if "accepted" in said:
        return {"outcome": "accepted", "detail": str(said["accepted"])}
    error = str(said.get("error", "no answer"))
    if any(w in error for w in _AUTH_WORDS):
        return {"outcome": "refused", "detail": "refused for its token"}
    return {"outcome": "unknown", "detail": error[-300:]}

"""Probe: import Ray, start a small local instance, run one task (a worker must register), stop it.

Stopping is the slow part of a short Ray session (ray.shutdown() waits on every daemon, seconds).
When the probe runs under coreutils' timeout, that process leads a process group holding only the
probe and what it started, so the probe kills the group's other members at once and exits.
"""

import importlib.util
import json
import os
import signal
import sys
import time

# typing is imported for mypy alone (which takes any TYPE_CHECKING as true): the probe never pays for it
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def address_file() -> str:
    """The file where `ray start` records the cluster that a bare ray.init() joins
    (ray._common.utils.get_ray_address_file in Ray 2.x)."""
    if "RAY_TMPDIR" in os.environ:
        base = os.environ["RAY_TMPDIR"]
    elif sys.platform.startswith("linux") and "TMPDIR" in os.environ:
        base = os.environ["TMPDIR"]
    else:
        base = "/tmp"  # noqa: S108 - Ray's own default, only read here
    return os.path.join(base, "ray", "ray_current_cluster")


def main(args: "dict[str, Any]") -> "dict[str, Any]":
    if importlib.util.find_spec("ray") is None:
        return {"installed": False}
    t0 = time.monotonic()
    try:
        import ray
    except Exception as exc:
        return {"installed": True, "error": f"{type(exc).__name__}: {exc}", "missing": getattr(exc, "name", None)}
    out: dict[str, Any] = {
        "installed": True,
        "version": ray.__version__,
        "import_seconds": round(time.monotonic() - t0, 2),
    }
    address = os.environ.get("RAY_ADDRESS")
    kwargs: dict[str, Any] = {} if address else {"num_cpus": args["num_cpus"], "include_dashboard": False}
    out["mode"] = f"connect to {address}" if address else f"local, num_cpus={args['num_cpus']}"
    if not address:
        try:
            with open(address_file(), encoding="utf-8") as f:
                out["address_file"] = {"path": address_file(), "address": f.read().strip()}
        except OSError:
            pass
    try:
        t1 = time.monotonic()
        ray.init(ignore_reinit_error=True, log_to_driver=False, **kwargs)
        out["started"] = True
        out["init_seconds"] = round(time.monotonic() - t1, 2)
        out["cpus"] = ray.cluster_resources().get("CPU", 0)
        out["gpus"] = ray.cluster_resources().get("GPU", 0)

        @ray.remote(num_cpus=0)
        def ping() -> int:
            return os.getpid()

        t2 = time.monotonic()
        ray.get(ping.remote(), timeout=args["task_timeout"])
        out["task_seconds"] = round(time.monotonic() - t2, 2)
    except Exception as exc:
        out["error"] = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
        out["stage"] = "task" if out.get("started") else "init"
    return out


def stop_fast() -> bool:
    """SIGKILL the other members of our process group (Ray's daemons and agents), then exit."""
    me, parent, group = os.getpid(), os.getppid(), os.getpgid(0)
    if group != parent:  # not under timeout's own group: other processes may share it
        return False
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in (me, parent):
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[2]) == group:
                os.kill(int(entry), signal.SIGKILL)
        except (OSError, ValueError, IndexError):
            continue
    os._exit(0)


if __name__ == "__main__":
    result = main(json.loads(sys.argv[1]))
    print("@@patchctl-probe@@ " + json.dumps(result), flush=True)
    if result.get("started") and not stop_fast():
        import ray

        ray.shutdown()

"""Probe: import Ray, start a small local instance, run one task (a worker must register), stop it."""

import importlib.util
import json
import os
import sys
import time


def main(args):
    if importlib.util.find_spec("ray") is None:
        return {"installed": False}
    t0 = time.monotonic()
    try:
        import ray
    except Exception as exc:
        return {"installed": True, "error": f"{type(exc).__name__}: {exc}", "missing": getattr(exc, "name", None)}
    out = {"installed": True, "version": ray.__version__, "import_seconds": round(time.monotonic() - t0, 2)}
    address = os.environ.get("RAY_ADDRESS")
    kwargs = {} if address else {"num_cpus": args["num_cpus"], "include_dashboard": False}
    out["mode"] = f"connect to {address}" if address else f"local, num_cpus={args['num_cpus']}"
    started = False
    try:
        t1 = time.monotonic()
        ray.init(ignore_reinit_error=True, log_to_driver=False, **kwargs)
        started = True
        out["init_seconds"] = round(time.monotonic() - t1, 2)
        out["cpus"] = ray.cluster_resources().get("CPU", 0)
        out["gpus"] = ray.cluster_resources().get("GPU", 0)

        @ray.remote(num_cpus=0)
        def ping():
            return os.getpid()

        t2 = time.monotonic()
        ray.get(ping.remote(), timeout=args["task_timeout"])
        out["task_seconds"] = round(time.monotonic() - t2, 2)
    except Exception as exc:
        out["error"] = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
        out["stage"] = "task" if started else "init"
    finally:
        if started:
            ray.shutdown()
    return out


if __name__ == "__main__":
    result = main(json.loads(sys.argv[1]))
    print("@@patchctl-probe@@ " + json.dumps(result), flush=True)

"""The ``ray start --block`` command line of one validate node (node.py runs it).

Kept apart from the node's supervision: this is the part that follows Ray's own options
(which ports it would otherwise fix, how to keep its client server out) and so changes with Ray
releases, while node.py's lifecycle does not.
"""

from __future__ import annotations

import json
import socket
import sys
from typing import Any

from patchctl.validate.host import census

_CLI = "import sys; from ray.scripts.scripts import main; sys.argv[0] = 'ray'; main()"
#: ``ray start`` starts Ray's client server on port 10001 whenever ray[client] is installed, with
#: no option to leave it out: this tells it the client is missing, unless the run asked for it
_NO_CLIENT = (
    "import sys; import ray.scripts.scripts as s; s.get_ray_client_dependency_error = "
    "lambda: 'not asked for'; sys.argv[0] = 'ray'; s.main()"
)


def _free_port(address: str) -> int:
    with socket.socket() as s:
        s.bind((address, 0))
        return int(s.getsockname()[1])


def ray_argv(request: dict[str, Any], temp_dir: str) -> list[str]:
    """``ray start --block`` for the head or a worker; the ports Ray would otherwise fix (the
    dashboard's 8265, its agent's 52365, the client server's 10001) are free ones on the node's
    address, so several nodes — or another user's Ray — can share a machine. The node offers its
    own resource (census.py) so the run can tell its nodes from any other."""
    address = request["address"]
    client = request["role"] == "head" and bool(request.get("ray_client"))
    argv = [
        sys.executable,
        "-c",
        _CLI if client else _NO_CLIENT,
        "start",
        "--block",
        "--node-ip-address",
        address,
        "--num-gpus",
        str(request["gpus"]),
        "--temp-dir",
        temp_dir,
        "--disable-usage-stats",
        "--dashboard-agent-listen-port",
        str(_free_port(address)),
        "--resources",
        json.dumps({census.own_resource(request["marker"]): 1}),
    ]
    if request.get("num_cpus") is not None:
        argv += ["--num-cpus", str(request["num_cpus"])]
    if request.get("object_store_bytes"):
        argv += ["--object-store-memory", str(request["object_store_bytes"])]
    if request["role"] == "head":
        argv += [
            "--head",
            "--port",
            str(request["port"]),
            "--dashboard-host",
            address,
            "--dashboard-port",
            str(_free_port(address)),
            "--include-dashboard=" + ("true" if request.get("dashboard") else "false"),
        ]
        if client:
            argv += ["--ray-client-server-port", str(_free_port(address))]
    else:
        argv += ["--address", request["gcs"]]
    return argv


def has_ray_client() -> bool:
    """ray[client] installed: its server would take the fixed port 10001 (minimal Ray has none,
    and refuses the option)."""
    try:
        from ray._private.utils import get_ray_client_dependency_error
    except ImportError:  # another Ray version: let Ray choose, as it would by default
        return False
    return get_ray_client_dependency_error() is None

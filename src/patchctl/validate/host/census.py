"""``census``: the nodes Ray's node table lists that are not the run's own.

Every node validate starts offers one custom resource named for its marker (:func:`own_resource`),
so a node is the run's own by what it was started with, not by its address: a stranger at one of
the run's addresses is still a stranger. A node validate only joined (``--join``) is known by its
address. Asked after bring-up (by ``form``) and again before the verdict (this action): a node
that joined while the trainer ran counts as much as one that was there from the start.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable
from typing import Any


def own_resource(marker: str) -> str:
    """The custom resource a node of the run offers (``ray start --resources``)."""
    return "patchctl_" + marker.replace(".", "_")


def foreign(nodes: Iterable[dict[str, Any]], resources: Iterable[str], joined: Iterable[str]) -> list[dict[str, str]]:
    """Live nodes (``ray.nodes()`` entries) that hold none of ``resources`` and are not at a
    ``joined`` address: each with its node id, address and host name."""
    own, existing = set(resources), set(joined)
    out = []
    for n in nodes:
        if not n.get("Alive") or own & set(n.get("Resources", {})) or n.get("NodeManagerAddress") in existing:
            continue
        out.append(
            {
                "node_id": str(n.get("NodeID", "")),
                "address": str(n.get("NodeManagerAddress", "")),
                "host": str(n.get("NodeManagerHostname", "")),
            }
        )
    return out


def run(request: dict[str, Any], emit: Callable[[dict[str, Any]], None]) -> int:
    os.environ.update(request.get("ray_auth", {}))  # before Ray reads its config
    import ray

    ray.init(address=request["gcs"], log_to_driver=False, logging_level=logging.ERROR, configure_logging=False)
    try:
        strangers = foreign(ray.nodes(), request["resources"], request.get("joined", []))
    finally:
        ray.shutdown()
    emit({"event": "reply", "foreign": strangers})
    return 0

"""Who else is in the run's cluster: the proofs validate asks for after bring-up and before the
verdict, judged here.

- Authentication: the head sent two callers without the token at its GCS (host/authprobe.py).
  Unless both were refused *for their token*, the run aborts (:class:`AuthNotEnforced`) and is
  torn down; ``--insecure-ray`` records the finding instead.
- Foreign nodes: every node validate starts offers a resource of its own (host/census.py); any
  other live node in Ray's node table fails the run, named (:class:`ForeignNode`). Checked from
  ``form``'s reply after bring-up, and by a ``census`` on the head before the verdict.
"""

from __future__ import annotations

import queue

from patchctl.validate import plan as planning
from patchctl.validate import remote
from patchctl.validate.errors import (
    AuthNotEnforced,
    ForeignNode,
    HostLost,
    HostNotReady,
)
from patchctl.validate.host.census import own_resource
from patchctl.validate.model import Node, RayCluster
from patchctl.validate.teardown import Started


def resource(plan: planning.Plan, started: Started, node: Node) -> str | None:
    """The node's own resource; None for a node validate only joined (known by its address)."""
    return None if node.index in started.joined else own_resource(plan.marker(node))


def judge(
    plan: planning.Plan, auth: dict[str, dict[str, str]], foreign: list[dict[str, str]], stage: str = "ray-up"
) -> dict[str, dict[str, str]]:
    """Raise for a stranger node, then for a cluster that let a caller without the token in
    (unless --insecure-ray); returns the authentication findings for the report."""
    if foreign:
        raise ForeignNode(plan.head.label, stage, foreign)
    if plan.options.join:
        return {}  # the user's own cluster: its authentication is theirs, not this run's
    refused = bool(auth) and all(v.get("outcome") == "refused" for v in auth.values())
    if not refused and not plan.options.insecure_ray:
        raise AuthNotEnforced(plan.head.label, auth or {"probe": {"outcome": "unknown", "detail": "no answer"}})
    return auth


def census(plan: planning.Plan, started: Started, ray: RayCluster) -> None:
    """Before the verdict: Ray's node table once more, for nodes that joined while the run went."""
    head = plan.head
    request = {
        "gcs": ray.address,
        "ray_auth": plan.ray_auth,
        "resources": [r for n in plan.nodes if (r := resource(plan, started, n))],
        "joined": [ray.nodes[n.index].address for n in plan.nodes if n.index in started.joined],
    }
    try:
        reply = remote.call(plan.cluster, head, "census", request, timeout=120, control=started.conns.masters[0].socket)
    except remote.Ended as exc:
        kind, problem, fix = remote.failure(plan.cluster, head, exc.returncode, exc.stderr)
        if kind == "unreachable":
            raise HostLost(head.label, "census", "head", problem) from None
        raise HostNotReady(head.label, "census", f"Ray's node table could not be read ({problem})", fix) from None
    except queue.Empty:
        raise HostLost(head.label, "census", "head", "the node table was not read within 120 s") from None
    if reply.get("foreign"):
        raise ForeignNode(head.label, "census", reply["foreign"])

"""The GPU identity check across the formed cluster (pure, so tests can feed it any nodes).

Two Ray nodes — or two ranks of one node — on one physical GPU is what the multi-node notes hit
as NCCL's "Duplicate GPU detected: rank 1 and rank 0 both on CUDA device": loopback hosts on
one machine with the same (or no) ``CUDA_VISIBLE_DEVICES``. nvidia-smi's UUIDs identify a GPU
whatever index a process sees it under.
"""

from __future__ import annotations

from patchctl.validate.errors import DuplicateGpu, UnevenGpus
from patchctl.validate.model import Node, RayNode


def check(nodes: tuple[RayNode, ...], configured: dict[str, Node]) -> None:
    """Raise :class:`DuplicateGpu` for a GPU behind two ranks, :class:`UnevenGpus` for nodes
    offering different counts (verl's ``n_gpus_per_node`` is one number)."""
    holders: dict[str, list[tuple[str, str]]] = {}
    for n in nodes:
        cvd = configured[n.label].env.get("CUDA_VISIBLE_DEVICES", n.cuda_visible_devices or "")
        for uuid in n.gpu_uuids:
            holders.setdefault(uuid, []).append((n.label, cvd))
    for uuid, who in holders.items():
        if len(who) > 1:
            raise DuplicateGpu(uuid, who)
    counts = [(n.label, n.gpus) for n in nodes]
    if len({c for _, c in counts}) > 1:
        raise UnevenGpus(counts)

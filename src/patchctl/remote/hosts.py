"""How migrate's results and validate's nodes name a cluster's hosts."""

from __future__ import annotations

from typing import TYPE_CHECKING

from patchctl.errors import ManifestError

if TYPE_CHECKING:
    from patchctl.clusters import Cluster


class DuplicateHost(ManifestError):
    """A cluster lists one ssh destination with one root twice: two runs would write one tree."""

    def __init__(self, cluster: Cluster, index: int) -> None:
        host = cluster.hosts[index]
        self.cluster, self.index, self.host = cluster.name, index, host
        super().__init__(
            cluster.source,
            f"clusters.{cluster.name}.hosts[{index}]",
            f"{host.ssh}:{host.root} is listed twice",
            "remove the duplicate",
        )


def labels(cluster: Cluster) -> list[str]:
    """The ssh destination, with the root where one repeats; a destination listed twice with
    one root is refused (:class:`DuplicateHost`)."""
    seen: dict[tuple[str, str], int] = {}
    for i, h in enumerate(cluster.hosts):
        if (h.ssh, h.root) in seen:
            raise DuplicateHost(cluster, i)
        seen[(h.ssh, h.root)] = i
    ssh_names = [h.ssh for h in cluster.hosts]
    return [h.ssh if ssh_names.count(h.ssh) == 1 else f"{h.ssh}:{h.root}" for h in cluster.hosts]

"""Cluster inventory: which hosts make up a cluster, where the tree lives there, and its paths.

Read from ``--config FILE``, else ``./patchctl.toml``, else ``~/.config/patchctl/config.toml``::

    [clusters.new_cluster]
    hosts = ["node1", "user@10.0.0.2", { ssh = "node3", root = "/scratch/verl_Uky" }]
    root = "/root/verl_Uky"
    ssh_config = "~/.ssh/config"          # optional, passed to ssh with -F
    profile = "standard"                  # which env variable set to render (standard | fast-load)
    include = ["checkpoints/keep"]        # optional: normally-excluded paths to send anyway
    max_delete = 100                      # optional: migrate --delete stops above this many per host
    bwlimit = 0                           # optional: rsync --bwlimit per host, KiB/s
    timeout = 60                          # optional: seconds without progress before a host fails
    python = "python3"                    # optional: the hosts' python3 for migrate's check
    [clusters.new_cluster.paths]          # the values git_ignore.py holds on that cluster
    DATA_DIR = "/data"
    MODEL_PATH = "/models/Qwen2.5-VL-3B-Instruct"

``validate``'s node settings, for every host or in a host's own table (which wins)::

    gpus = 8                              # GPUs Ray offers per host (default: counted by nvidia-smi)
    ray_port = 6379                       # the head's GCS port
    ifname = "eth0"                       # NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME
    preflight_skip = ["vllm"]             # verify --env checks validate leaves out
    hosts = [{ ssh = "gpu2", address = "10.0.0.12", gpus = 1, env = { CUDA_VISIBLE_DEVICES = "1" } }]
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from patchctl import config as config_file
from patchctl.cluster_nodes import check_entry, node_settings
from patchctl.errors import ManifestError, NoClusterConfig, UnknownCluster
from patchctl.errors.usage import ConfigProblems
from patchctl.schema import Field, check, check_text
from patchctl.slurm import settings as slurm_settings
from patchctl.slurm.settings import SlurmSettings
from patchctl.validate.checks import settings as health_settings

PROFILES = ("standard", "fast-load")

CLUSTER_SCHEMA = {
    "hosts": Field(list, True, 'a list of ssh destinations, e.g. ["node1", "user@host"]'),
    "root": Field(str, True, 'the tree\'s path on the hosts, e.g. "/root/verl_Uky"'),
    "ssh_config": Field(str, False, "a path to an ssh config file"),
    "paths": Field(dict, False, "a table of git_ignore.py values such as DATA_DIR"),
    "profile": Field(str, False, '"standard" or "fast-load"', choices=PROFILES),
    "include": Field(list, False, "paths to send although they look like outputs", item=str),
    "exclude": Field(list, False, "extra paths never to send", item=str),
    "max_delete": Field(int, False, "the most deletions --delete may make per host (default 100)"),
    "env": Field(dict, False, "extra environment variables for the rendered env file"),
    "bwlimit": Field(int, False, "rsync's bandwidth limit per host in KiB/s (0: none)"),
    "timeout": Field(int, False, "seconds without progress before a host counts as failed (default 60)"),
    "python": Field(str, False, 'the python3 that checks the tree on the hosts, e.g. "/usr/bin/python3"'),
    # validate's node settings for every host (a host's own table overrides each)
    "gpus": Field(int, False, "GPUs per host that Ray offers (default: what the host's preflight counts)"),
    "ray_port": Field(int, False, "the Ray head's GCS port (default 6379)"),
    "ifname": Field(str, False, 'the network interface NCCL and Gloo use, e.g. "eth0"'),
    "preflight_skip": Field(list, False, 'verify --env checks validate leaves out, e.g. ["vllm"]', item=str),
    "health": Field(dict, False, "validate's health-check bars, e.g. { storage_bytes = 1073741824 }"),
}
#: a ``scheduler = "slurm"`` cluster's keys: no hosts (the job's nodes), the job's own keys
SLURM_CLUSTER_SCHEMA = {
    **{k: v for k, v in CLUSTER_SCHEMA.items() if k not in ("hosts", "gpus")},
    **slurm_settings.SLURM_SCHEMA,
}
HOST_SCHEMA = {
    "ssh": Field(str, True, 'an ssh destination such as "node1" or "user@host"'),
    "root": Field(str, False, "this host's tree path, overriding the cluster's root"),
    "address": Field(str, False, 'the IP the other hosts reach this one at (Ray\'s node IP), e.g. "10.0.0.2"'),
    "ifname": Field(str, False, "this host's network interface for NCCL and Gloo, e.g. ib0"),
    "gpus": Field(int, False, "the GPUs Ray offers on this host"),
    "ray_port": Field(int, False, "the Ray head's GCS port when this host is the head"),
    "env": Field(dict, False, 'variables for this host only, e.g. { CUDA_VISIBLE_DEVICES = "0" }'),
}


@dataclass(frozen=True)
class Host:
    #: the ssh destination, passed to ssh/rsync as is
    ssh: str
    #: the tree's absolute path on this host
    root: str
    #: Ray's node IP: where the other hosts reach this one (None: the address ssh reached it at)
    address: str | None = None
    #: NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME on this host (None: NCCL and Gloo choose)
    ifname: str | None = None
    #: the GPUs Ray offers here (None: what the host's preflight counts)
    gpus: int | None = None
    #: the GCS port when this host is the head
    ray_port: int = 6379
    #: variables set for every process validate starts here (cluster env, then the host's own)
    env: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Cluster:
    name: str
    hosts: tuple[Host, ...]
    root: str
    #: the file it came from, for messages and to resolve relative paths
    source: Path
    ssh_config: Path | None = None
    paths: dict[str, str] = field(default_factory=dict)
    profile: str = "standard"
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    max_delete: int = 100
    env: dict[str, str] = field(default_factory=dict)
    #: rsync --bwlimit in KiB/s per host; 0 means no limit
    bwlimit: int = 0
    #: rsync --timeout and the ssh keep-alive budget, in seconds
    timeout: int = 60
    #: the interpreter migrate's check runs with on the hosts (python3 >= 3.6, stdlib only)
    python: str = "python3"
    #: verify --env checks that validate leaves out on this cluster
    preflight_skip: tuple[str, ...] = ()
    #: validate's health-check bars and bounds ([clusters.NAME.health], validate/checks/settings.py)
    health: health_settings.Settings = field(default_factory=health_settings.Settings)
    #: ``scheduler = "slurm"``: the job's settings; the one host is then the login node
    slurm: SlurmSettings | None = None


def find_config(config: Path | None) -> Path | None:
    return config_file.find(config)


def _check_root(root: str, file: Path, key: str, example: str) -> None:
    """A host root must be absolute and must not be ``/`` itself: migrate writes, and with
    ``--delete`` removes, files inside it, and its agent refuses every path under ``/``."""
    if not root.startswith("/"):
        raise ManifestError(file, key, f"{root!r} is not absolute", f'write a path such as "{example}"')
    # posixpath.normpath keeps a leading "//" (POSIX leaves its meaning open); it is still "/"
    if posixpath.normpath(root).strip("/") == "":
        raise ManifestError(
            file,
            key,
            f"{root!r} is the file system's root",
            f'write the directory the tree lives in, such as "{example}"',
        )


def _cluster(name: str, raw: Any, file: Path) -> Cluster:
    prefix = f"clusters.{name}."
    check_text(name, file=file, key=prefix[:-1])
    if not isinstance(raw, dict):
        raise ManifestError(file, prefix[:-1], "expected a table", f"write [clusters.{name}] with hosts and root")
    check_text(raw, file=file, key=prefix[:-1])  # every host name, root and path, before anything uses them
    if "scheduler" in raw:
        return _slurm_cluster(name, raw, file)
    found: list[ManifestError] = []
    check(raw, CLUSTER_SCHEMA, file=file, prefix=prefix, problems=found)
    config_file.raise_all(file, found)  # every bad key of the table at once
    root: str = raw["root"]
    _check_root(root, file, prefix + "root", "/root/verl_Uky")
    hosts = []
    for i, h in enumerate(raw["hosts"]):
        where = f"{prefix}hosts[{i}]."
        if isinstance(h, str):
            hosts.append(Host(h, root, **node_settings(raw, {}, file, prefix, where)))
        elif isinstance(h, dict):
            check(h, HOST_SCHEMA, file=file, prefix=where)
            hosts.append(Host(h["ssh"], h.get("root", root), **node_settings(raw, h, file, prefix, where)))
            _check_root(hosts[-1].root, file, f"{where}root", "/scratch/verl_Uky")
        else:
            raise ManifestError(
                file,
                f"{prefix}hosts[{i}]",
                f"expected a string or a table, got {type(h).__name__}",
                'write "node1" or { ssh = "node1", root = "/path" }',
            )
        if hosts[-1].ssh.startswith("-"):
            raise ManifestError(
                file,
                f"{prefix}hosts[{i}]",
                f"{hosts[-1].ssh!r} starts with '-'",
                "write an ssh destination, not an option",
            )
    if not hosts:
        raise ManifestError(file, prefix + "hosts", "is empty", "list at least one ssh destination")
    return _build(name, tuple(hosts), root, raw, file, prefix)


def _slurm_cluster(name: str, raw: dict[str, Any], file: Path) -> Cluster:
    """A ``scheduler = "slurm"`` cluster: its one host is the login node, where migrate sends the
    tree and every Slurm command runs; the compute nodes come from the job (patchctl.slurm)."""
    prefix = f"clusters.{name}."
    found: list[ManifestError] = [
        ManifestError(
            file,
            prefix + key,
            'conflicts with scheduler = "slurm"',
            "remove it: the nodes come from the job (nodes, gpus_per_node)",
        )
        for key in ("hosts", "gpus")
        if key in raw
    ]
    rest = {k: v for k, v in raw.items() if k not in ("hosts", "gpus")}
    check(rest, SLURM_CLUSTER_SCHEMA, file=file, prefix=prefix, problems=found)
    config_file.raise_all(file, found)
    root: str = raw["root"]
    _check_root(root, file, prefix + "root", "/shared/verl_Uky")
    job = slurm_settings.load(raw, file, prefix, root)
    settings = node_settings({k: raw[k] for k in ("ifname", "ray_port") if k in raw}, {}, file, prefix, prefix)
    login = Host(job.login, job.node_root(root, "login"), **settings)
    return _build(name, (login,), root, raw, file, prefix, job)


def _build(
    name: str,
    hosts: tuple[Host, ...],
    root: str,
    raw: dict[str, Any],
    file: Path,
    prefix: str,
    slurm: SlurmSettings | None = None,
) -> Cluster:
    """The keys every cluster shares, checked and read the same for hosts over ssh and for a
    Slurm cluster's login node."""
    for key in ("paths", "env"):
        for k, v in raw.get(key, {}).items():  # env: as migrate's env file needs; caught at load
            check_entry(file, f"{prefix}{key}.", k, v, variable=key == "env")
    for key in ("max_delete", "bwlimit", "timeout"):
        if key in raw and raw[key] < (1 if key == "timeout" else 0):
            raise ManifestError(
                file,
                prefix + key,
                f"{raw[key]} is out of range",
                "write a positive number" if key == "timeout" else "write 0 or more",
            )
    ssh_config = raw.get("ssh_config")
    return Cluster(
        name,
        hosts,
        root,
        file,
        (file.parent / Path(ssh_config).expanduser()) if ssh_config else None,
        dict(raw.get("paths", {})),
        raw.get("profile", "standard"),
        tuple(raw.get("include", ())),
        tuple(raw.get("exclude", ())),
        raw.get("max_delete", 100),
        dict(raw.get("env", {})),
        raw.get("bwlimit", 0),
        raw.get("timeout", 60),
        raw.get("python", "python3"),
        tuple(raw.get("preflight_skip", ())),
        health_settings.load(raw.get("health", {}), file, prefix + "health."),
        slurm,
    )


def load_clusters(config: Path | None = None) -> dict[str, Cluster]:
    """Every cluster of the config file (validated); empty when there is no config file."""
    problems: list[ManifestError] = []
    loaded = config_file.load(config, problems)
    if loaded.file is None:
        return {}
    clusters = {}
    for name, raw in loaded.clusters.items():  # every cluster checked, every problem reported at once
        try:
            clusters[name] = _cluster(name, raw, loaded.file)
        except ConfigProblems as exc:
            problems += exc.problems
        except ManifestError as exc:
            problems.append(exc)
    config_file.raise_all(loaded.file, problems)
    return clusters


def load_cluster(name: str, config: Path | None = None) -> Cluster:
    clusters = load_clusters(config)
    if name not in clusters:
        where = find_config(config)
        if where is None:
            raise NoClusterConfig(name, config_file.search_paths())
        raise UnknownCluster(where, name, sorted(clusters))
    cluster = clusters[name]
    # checked here, for the chosen cluster only: a config shared between machines may name files
    # that exist only where that cluster is used; without this every host would fail alike
    if cluster.ssh_config is not None and not cluster.ssh_config.is_file():
        raise ManifestError(
            cluster.source,
            f"clusters.{name}.ssh_config",
            f"{cluster.ssh_config} does not exist",
            "write the path of an ssh config file (a relative path is read from the directory "
            "of this file), or remove the key to use ~/.ssh/config",
        )
    return cluster

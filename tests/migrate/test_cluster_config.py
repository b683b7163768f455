"""The cluster inventory migrate reads: where it is found, what it holds, how bad input is named."""

from __future__ import annotations

from pathlib import Path

import pytest

from patchctl.clusters import Host, load_cluster
from patchctl.errors import ManifestError

GOOD = """
[clusters.new_cluster]
hosts = ["node1", "user@10.0.0.2", { ssh = "node3", root = "/scratch/verl_Uky" }]
root = "/root/verl_Uky"
ssh_config = "ssh/config"
profile = "fast-load"
include = ["checkpoints/keep"]
max_delete = 20
bwlimit = 50000
timeout = 30
python = "/usr/bin/python3"
[clusters.new_cluster.paths]
DATA_DIR = "/data/fake_dataset"
MODEL_PATH = "/models/Qwen2.5-VL-3B-Instruct"
"""


def test_every_key(tmp_path: Path) -> None:
    file = tmp_path / "inv.toml"
    file.write_text(GOOD)
    (tmp_path / "ssh").mkdir()
    (tmp_path / "ssh" / "config").write_text("")
    c = load_cluster("new_cluster", file)
    assert c.hosts == (
        Host("node1", "/root/verl_Uky"),
        Host("user@10.0.0.2", "/root/verl_Uky"),
        Host("node3", "/scratch/verl_Uky"),
    )
    assert c.ssh_config == tmp_path / "ssh" / "config"  # relative to the config file
    assert (c.profile, c.include, c.max_delete, c.bwlimit, c.timeout, c.python) == (
        "fast-load",
        ("checkpoints/keep",),
        20,
        50000,
        30,
        "/usr/bin/python3",
    )
    assert c.paths == {"DATA_DIR": "/data/fake_dataset", "MODEL_PATH": "/models/Qwen2.5-VL-3B-Instruct"}


def test_search_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    (tmp_path / "xdg" / "patchctl").mkdir(parents=True)
    (tmp_path / "xdg" / "patchctl" / "config.toml").write_text('[clusters.a]\nhosts = ["user-dir"]\nroot = "/r"\n')
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    assert load_cluster("a").hosts[0].ssh == "user-dir"
    (work / "patchctl.toml").write_text('[clusters.a]\nhosts = ["cwd"]\nroot = "/r"\n')
    assert load_cluster("a").hosts[0].ssh == "cwd"
    (tmp_path / "explicit.toml").write_text('[clusters.a]\nhosts = ["explicit"]\nroot = "/r"\n')
    assert load_cluster("a", tmp_path / "explicit.toml").hosts[0].ssh == "explicit"


@pytest.mark.parametrize(
    "body, key, fix",
    [
        ('root = "/r"', "clusters.c.hosts", "add it"),
        ('hosts = []\nroot = "/r"', "clusters.c.hosts", "list at least one ssh destination"),
        ('hosts = ["n"]\nroot = "r"', "clusters.c.root", 'write a path such as "/root/verl_Uky"'),
        ('hosts = [{ ssh = "n", root = "rel" }]\nroot = "/r"', "clusters.c.hosts[0].root", "write a path"),
        (
            'hosts = [{ host = "n" }]\nroot = "/r"',
            "clusters.c.hosts[0].host",
            "use one of: address, env, gpus, ifname, ray_port, root, ssh",
        ),
        ('hosts = ["-oProxyCommand=x"]\nroot = "/r"', "clusters.c.hosts[0]", "write an ssh destination"),
        ('hosts = ["n"]\nroot = "/r"\nbwlimit = "fast"', "clusters.c.bwlimit", "write rsync's bandwidth limit"),
        ('hosts = ["n"]\nroot = "/r"\ntimeout = 0', "clusters.c.timeout", "write a positive number"),
        ('hosts = ["n"]\nroot = "/r"\nprofile = "turbo"', "clusters.c.profile", "use one of: standard, fast-load"),
        (
            'hosts = ["n"]\nroot = "/r"\n[clusters.c.paths]\nDATA_DIR = 3',
            "clusters.c.paths.DATA_DIR",
            "quote the value",
        ),
    ],
)
def test_errors_name_the_key_and_the_fix(tmp_path: Path, body: str, key: str, fix: str) -> None:
    file = tmp_path / "patchctl.toml"
    file.write_text(f"[clusters.c]\n{body}\n")
    with pytest.raises(ManifestError) as err:
        load_cluster("c", file)
    assert err.value.key == key and fix in err.value.fix and str(file) in str(err.value)


@pytest.mark.parametrize(
    "body, key, root",
    [
        ('hosts = ["n"]\nroot = "/"', "clusters.c.root", "/"),
        ('hosts = ["n"]\nroot = "/srv/.."', "clusters.c.root", "/srv/.."),
        ('hosts = ["n"]\nroot = "//"', "clusters.c.root", "//"),
        ('hosts = ["n", { ssh = "m", root = "/./" }]\nroot = "/r"', "clusters.c.hosts[1].root", "/./"),
    ],
)
def test_a_root_of_slash_is_a_config_error(tmp_path: Path, body: str, key: str, root: str) -> None:
    """The host's agent refuses every path under / (before #10 a raw TypeError from the host)."""
    file = tmp_path / "patchctl.toml"
    file.write_text(f"[clusters.c]\n{body}\n")
    with pytest.raises(ManifestError) as err:
        load_cluster("c", file)
    example = "/scratch/verl_Uky" if "hosts[" in key else "/root/verl_Uky"
    assert str(err.value) == (
        f"{file}: key '{key}': {root!r} is the file system's root; "
        f'write the directory the tree lives in, such as "{example}"'
    )


def test_a_missing_ssh_config_is_named_before_any_host_is_tried(tmp_path: Path) -> None:
    file = tmp_path / "patchctl.toml"
    file.write_text(
        '[clusters.c]\nhosts = ["n"]\nroot = "/r"\nssh_config = "ssh/config"\n'
        '[clusters.other]\nhosts = ["m"]\nroot = "/r"\nssh_config = "/nowhere/config"\n'
    )
    with pytest.raises(ManifestError) as err:
        load_cluster("c", file)
    assert str(err.value) == (
        f"{file}: key 'clusters.c.ssh_config': {tmp_path / 'ssh' / 'config'} does not exist; "
        "write the path of an ssh config file (a relative path is read from the directory "
        "of this file), or remove the key to use ~/.ssh/config"
    )
    (tmp_path / "ssh").mkdir()
    (tmp_path / "ssh" / "config").write_text("")
    assert load_cluster("c", file).ssh_config == tmp_path / "ssh" / "config"  # the other cluster's file is its own

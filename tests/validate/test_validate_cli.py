"""validate's command line without Ray: --dry-run, config errors, report comparison, preflight stops."""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from validate_helpers import HERE, Site, host_entry, ours

from patchctl.cli.main import cli
from patchctl.clusters import load_cluster
from patchctl.errors import ManifestError


def invoke(*args: str) -> tuple[int, str]:
    done = CliRunner().invoke(cli, ["validate", *args])
    # --json: the document alone, as `| jq` reads it (the default profile's pick is said on stderr)
    return done.exit_code, done.stdout if "--json" in args and done.exit_code == 0 else done.output


def test_dry_run_prints_every_remote_command_and_the_trainer_command(site: Site) -> None:
    site.config(site.hosts({"node1": "0", "node2": "1"}))
    code, out = invoke("loop", "--config", str(site.dir / "patchctl.toml"), "--dry-run", "trainer.total_epochs=2")
    print(out)
    assert code == 0, out
    lines = out.splitlines()
    purposes = [ln[2:] for ln in lines if ln.startswith("# node")]
    assert purposes == [
        "node1: ship",
        "node2: ship",
        "node1: preflight",
        "node2: preflight",
        "node1: ray-head",
        "node2: ray-worker",
        "node1: form",
        "node1: train",
        "node1: census",
        "node1: fetch",
        "node1: reap",
        "node2: reap",
    ]
    ray_head = shlex.split(lines[lines.index("# node1: ray-head") + 1])
    assert ray_head[0] == "ssh" and "node1" in ray_head
    remote = shlex.split(" ".join(ray_head[ray_head.index("node1") + 1 :]))  # what the remote shell runs
    assert remote[:2] == ["sh", "-c"] and remote[4] == str(site.root("node1"))
    assert "CUDA_VISIBLE_DEVICES=0" in remote and "NCCL_NVLS_ENABLE=0" in remote
    assert remote[-3:] == ["-m", "patchctl.validate.host", "node"]
    trainer = shlex.split(
        lines[
            lines.index("# the trainer, on the head (trainer.nnodes / n_gpus_per_node: what Ray reports at run time)")
            + 1
        ]
    )
    assert trainer[1:3] == ["-m", "verl.trainer.main_ppo"]
    assert "trainer.nnodes=2" in trainer and "trainer.n_gpus_per_node=1" in trainer
    assert trainer[-1] == "trainer.total_epochs=2"
    assert "# $STAGE: a temporary directory holding validate/pkg/patchctl, a link to patchctl's package" in lines
    assert ours() == []


def test_ifname_reaches_nccl_and_gloo_on_that_host(site: Site) -> None:
    site.config([host_entry("node1", site.root("node1"), "0")[:-2] + ', ifname = "lo" }'])
    _code, out = invoke("loop", "--config", str(site.dir / "patchctl.toml"), "--dry-run", "--json")
    argv = json.loads(out)["commands"][2]["argv"]
    remote = shlex.split(" ".join(argv[argv.index("node1") + 1 :]))
    assert "NCCL_SOCKET_IFNAME=lo" in remote and "GLOO_SOCKET_IFNAME=lo" in remote


def test_dry_run_json_names_the_run_and_starts_nothing(site: Site) -> None:
    site.config(site.hosts({"node1": "0", "node2": "1"}))
    code, out = invoke("loop", "--config", str(site.dir / "patchctl.toml"), "--dry-run", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["verdict"] == "planned" and len(doc["commands"]) == 12
    assert not (site.root("node1") / ".patchctl").exists()


@pytest.mark.parametrize(
    "entry, key, problem",
    [
        ('{ ssh = "n1", address = "-oProxyCommand=x" }', "clusters.c.hosts[0].address", "is not an address"),
        ('{ ssh = "n1", ifname = "eth0;reboot" }', "clusters.c.hosts[0].ifname", "is not an address or interface"),
        ('{ ssh = "n1", gpus = -1 }', "clusters.c.hosts[0].gpus", "out of range"),
        ('{ ssh = "n1", ray_port = 0 }', "clusters.c.hosts[0].ray_port", "out of range"),
        ('{ ssh = "n1", env = { "1X" = "a" } }', "clusters.c.hosts[0].env.1X", "not a shell variable name"),
        ('{ ssh = "n1", env = { A = 1 } }', "clusters.c.hosts[0].env.A", "expected a string"),
        (
            '{ ssh = "n1", gpus = 2, env = { CUDA_VISIBLE_DEVICES = "0" } }',
            "clusters.c.hosts[0].gpus",
            "CUDA_VISIBLE_DEVICES='0' shows 1",
        ),
        ('{ ssh = "n1", gpu = 2 }', "clusters.c.hosts[0].gpu", "unknown key"),
    ],
)
def test_per_host_settings_are_validated_naming_the_key(tmp_path: Path, entry: str, key: str, problem: str) -> None:
    cfg = tmp_path / "patchctl.toml"
    cfg.write_text(f'[clusters.c]\nhosts = [{entry}]\nroot = "/r"\n')
    with pytest.raises(ManifestError) as err:
        load_cluster("c", cfg)
    assert err.value.key == key and problem in str(err.value)


def test_cluster_level_node_settings_apply_to_every_host_and_a_host_overrides(tmp_path: Path) -> None:
    cfg = tmp_path / "patchctl.toml"
    cfg.write_text(
        '[clusters.c]\nhosts = ["a", { ssh = "b", gpus = 1, ray_port = 7000, ifname = "ib0", '
        'env = { CUDA_VISIBLE_DEVICES = "1" } }]\nroot = "/r"\ngpus = 2\nifname = "eth0"\n'
        'env = { NCCL_NVLS_ENABLE = "0" }\n'
    )
    a, b = load_cluster("c", cfg).hosts
    assert (a.gpus, a.ray_port, a.ifname, a.env) == (2, 6379, "eth0", {"NCCL_NVLS_ENABLE": "0"})
    assert (b.gpus, b.ray_port, b.ifname) == (1, 7000, "ib0")
    assert b.env == {"NCCL_NVLS_ENABLE": "0", "CUDA_VISIBLE_DEVICES": "1"}


def test_migrate_renders_each_hosts_env_into_its_env_file(site: Site) -> None:
    cluster = site.cluster(site.hosts({"node1": "0", "node2": "1"}))
    site.migrate(cluster)
    for alias, cvd in (("node1", "0"), ("node2", "1")):
        env = (site.root(alias) / ".patchctl" / "env.sh").read_text()
        assert f"export CUDA_VISIBLE_DEVICES={cvd}\n" in env and "export NCCL_NVLS_ENABLE=0\n" in env
        assert "export TORCH_SYMM_MEM_DISABLE_MULTICAST=1\n" in env and "export NVSHMEM_DISABLE_NVLS=1\n" in env


def test_a_failing_preflight_stops_before_ray_with_the_fix(site: Site) -> None:
    hosts = [*site.hosts({"node1": "0"}), host_entry("node2", site.root("node2"), "1,2,5", gpus=3)]
    cluster = site.cluster(hosts)
    site.migrate(cluster)
    code, out = invoke("loop", "--config", str(site.dir / "patchctl.toml"))
    print(out)
    assert code == 1, out
    assert "preflight (host x check)" in out
    assert "node2: preflight check 'gpus' failed: 3 configured, 2 visible within CUDA_VISIBLE_DEVICES=1,2,5" in out
    assert "validate: FAIL" in out and "teardown" not in out
    assert ours() == []


def test_a_tree_not_migrated_yet_is_named_with_the_fix(site: Site) -> None:
    site.config(site.hosts({"node1": "0"}))
    code, out = invoke("loop", "--config", str(site.dir / "patchctl.toml"))
    assert code == 1
    assert "node1:" in out and "run `patchctl migrate loop` first" in out


def test_compare_two_reports_without_a_cluster(tmp_path: Path) -> None:
    a, b = _report(tmp_path / "a", 2, [0.1, 0.5, 0.9], "2.60.0"), _report(tmp_path / "b", 1, [0.2, 0.4], "2.59.0")
    code, out = invoke("--compare", str(b), "--compare", str(a), "--json")  # OLD first, as diff
    assert code == 0, out
    doc = json.loads(out)
    rows = {r[0]: (r[1], r[2]) for r in doc["rows"]}
    assert rows["final reward"] == ("0.9", "0.4") and rows["seconds per step"] == ("0.5", "0.5")
    assert rows["time to first step (s)"] == ("30.0", "30.0")
    assert rows["GPUs"] == ("2 node(s) x 1 = 2 x Stub GPU", "1 node(s) x 1 = 1 x Stub GPU")
    assert doc["versions"] == [["ray", "2.60.0", "2.59.0"]]
    assert doc["patches"]["both"] == ["uky/p1"] and doc["patches"]["only_new"] == ["uky/p2"]
    assert Path(doc["plot"]).is_file()


def _report(d: Path, nodes: int, rewards: list[float], ray: str) -> Path:
    d.mkdir(parents=True)
    steps = [{"step": i + 1, "at": 30.0 + 0.5 * i, "metrics": {"critic/score/mean": r}} for i, r in enumerate(rewards)]
    patches = ["p1", "p2"] if nodes == 2 else ["p1"]
    (d / "report.json").write_text(
        json.dumps(
            {
                "verdict": "pass",
                "steps": steps,
                "timings": {"first_step": 30.0, "verdict": 40.0},
                "packages": {"ray": ray, "torch": "2.9"},
                "tree": {"patchsets": {"uky": {"patches": patches}}},
            }
        )
    )
    (d / "validate.json").write_text(
        json.dumps({"ray": {"nodes": [{"gpus": 1, "gpu_names": ["Stub GPU"]} for _ in range(nodes)]}})
    )
    return d / "report.json"


def test_unreadable_compare_report_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text("{}")
    code, out = invoke("--compare", str(tmp_path / "x.json"), "--compare", str(tmp_path / "x.json"))
    assert code == 2 and "not a patchctl run report" in out and "Traceback" not in out


def test_standin_is_the_tree_the_tests_migrate() -> None:
    assert (HERE / "standin" / "verl" / "trainer" / "main_ppo.py").is_file()


def test_the_profile_makes_some_checks_moot(tmp_path: Path) -> None:
    from patchctl.validate import plan as planning
    from patchctl.validate.preflight import skipped

    cfg = tmp_path / "patchctl.toml"
    cfg.write_text('[clusters.c]\nhosts = ["a"]\nroot = "/r"\npreflight_skip = ["torch"]\n')
    cluster = load_cluster("c", cfg)
    assert skipped(planning.make(cluster, planning.Options("smoke"))) == {
        "torch": "clusters.c.preflight_skip",
        "vllm": "not needed by profile smoke",
        "vllm_attention_backend": "not needed by profile smoke",
        "data": "not needed by profile smoke",
        "model": "not needed by profile smoke",
    }
    assert skipped(planning.make(cluster, planning.Options("debug"))) == {"torch": "clusters.c.preflight_skip"}


@pytest.mark.slow
def test_without_profile_the_checkout_here_picks_the_smoke_profile(
    site: Site, release_tree: Callable[[str], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 39 req 7: ``smoke`` rolls out with HF, which verl >= 0.6 dropped; the default follows
    the tree migrate sends (the checkout around the current folder) and says so on stderr."""
    config = str(site.config(site.hosts({"node1": "0"})))
    plans = {}
    for where, version in ((release_tree("0.6.1"), "0.6.1"), (site.dir, None)):
        monkeypatch.chdir(where)
        done = CliRunner().invoke(cli, ["validate", "loop", "--config", config, "--dry-run", "--json"])
        assert done.exit_code == 0, done.output
        plans[version] = (json.loads(done.stdout)["profile"], done.stderr)
    assert plans["0.6.1"][0] == "smoke-vllm"
    assert "validate: profile smoke-vllm (picked: verl 0.6.1 at " in plans["0.6.1"][1]
    assert plans[None][0] == "smoke"
    assert "picked: no verl checkout around the current folder" in plans[None][1]

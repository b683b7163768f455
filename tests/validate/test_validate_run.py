"""validate end to end on the loopback hosts: real ssh, real Ray nodes at 127.0.0.2-4, the real
train pipeline on the head (with a stand-in verl on CPU), fetch-back, teardown and compare."""

from __future__ import annotations

import json
from pathlib import Path

from validate_helpers import ADDRESS, Site, host_entry, ours


def test_three_hosts_form_one_cluster_train_and_come_home(site: Site) -> None:
    hosts = site.hosts({"node2": "1", "node3": "2"}, gpus=1)
    # a host env that sets PYTHONPATH (a site bundle, say) keeps it, after patchctl's package
    cluster = site.cluster([host_entry("node1", site.root("node1"), "0", env={"PYTHONPATH": "/opt/extra"}), *hosts])
    site.migrate(cluster)
    out = site.dir / "run"
    done = site.validate("--out", str(out), "--ray-timeout", "60", "--ray-cpus", "1", "--json")
    assert done.exit_code == 0, done.output
    doc = json.loads(done.output[done.output.index("{") :])
    assert doc["verdict"] == "pass", doc["cause"]
    nodes = doc["ray"]["nodes"]
    assert [(n["label"], n["address"], n["gpus"]) for n in nodes] == [
        ("node1", ADDRESS["node1"], 1),
        ("node2", ADDRESS["node2"], 1),
        ("node3", ADDRESS["node3"], 1),
    ]
    # the NVLink-multicast variables of the hosts' env reached a Ray worker on every node
    for n in nodes:
        assert n["worker_env"]["NCCL_NVLS_ENABLE"] == "0" and n["worker_env"]["NVSHMEM_DISABLE_NVLS"] == "1"
        assert n["worker_env"]["TORCH_SYMM_MEM_DISABLE_MULTICAST"] == "1"
    assert [n["gpu_uuids"][0][-1] for n in nodes] == ["0", "1", "2"]
    command = doc["trained"]["command"]
    assert "trainer.nnodes=3" in command and "trainer.n_gpus_per_node=1" in command
    assert {Path(f).name for f in doc["fetched"]} >= {"train.log", "report.json", "report.png"}
    report = json.loads((out / "report.json").read_text())
    head = site.root("node1")
    assert report["env"]["PYTHONPATH"] == f"{head}:{head}/.patchctl/validate/pkg:/opt/extra"
    assert "RAY_AUTH_TOKEN" not in json.dumps(report) and "RAY_AUTH_TOKEN" not in json.dumps(doc)
    assert report["verdict"] == "pass" and len(report["steps"]) == 40
    log = (out / "train.log").read_text()
    assert f"rank on {ADDRESS['node3']}: CUDA_VISIBLE_DEVICES=2 NCCL_NVLS_ENABLE=0" in log.replace("'", "")
    assert [t["status"] for t in doc["teardown"]] == ["stopped"] * 3
    assert ours() == []
    assert (out / "validate.json").is_file()

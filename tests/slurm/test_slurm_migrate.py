"""migrate on a Slurm cluster (issue 36 req 2): the tree reaches the login node as any host's does,
then every compute node confirms through one srun step that it sees the same tree; a node that
does not is named. Without a shared root, sbcast carries the login node's tree to each node's root."""

from __future__ import annotations

import json
import shutil

from slurm_fixtures import SlurmSite
from tests.clirun import run

MAIN = "verl/trainer/main_ppo.py"


def migrate(site: SlurmSite, *extra: str) -> tuple[int, str]:
    return run("migrate", "hpc", "--config", str(site.dir / "patchctl.toml"), "--target", str(site.tree), *extra)


def rows(out: str) -> dict[str, dict]:
    return {h["host"]: h for h in json.loads(out)["hosts"]}


def test_shared_root_is_confirmed_by_every_node(slurm_site: SlurmSite) -> None:
    slurm_site.config()
    code, out = migrate(slurm_site)
    assert code == 0, out
    assert (slurm_site.shared / MAIN).read_bytes() == (slurm_site.tree / MAIN).read_bytes()
    assert "n1 (srun)" in out and "n2 (srun)" in out
    assert "migrate hpc: 3/3 hosts ok and verified" in out


def test_a_node_behind_another_mount_is_named(slurm_site: SlurmSite) -> None:
    slurm_site.config()
    assert migrate(slurm_site)[0] == 0
    # n2 sees an older copy at the same path (another mount, a stale cache): its slurmd, and so its
    # job steps, run where that copy is mounted over the shared root
    stale = slurm_site.dir / "stale"
    shutil.copytree(slurm_site.shared, stale, symlinks=True)
    (stale / MAIN).write_text("# an older main_ppo.py\n")
    slurm_site.slurm.cluster.remount("n2", stale, slurm_site.shared)
    code, out = migrate(slurm_site, "--json")
    assert code == 1, out
    found = rows(out)
    assert found["n1 (srun)"]["status"] == "ok" and found["node1"]["status"] == "ok"
    assert found["n2 (srun)"]["status"] == "mismatch"
    assert "sees a different tree at" in found["n2 (srun)"]["reason"]
    code, text = migrate(slurm_site)
    assert code == 1 and "n2 (srun): mismatch: sees a different tree" in text


def test_nodes_option_limits_the_confirmation(slurm_site: SlurmSite) -> None:
    slurm_site.config()
    code, out = migrate(slurm_site, "--json", "--nodes", "n2")
    assert code == 0, out
    assert set(rows(out)) == {"node1", "n2 (srun)"}
    code, out = migrate(slurm_site, "--nodes", "n2;id")
    assert code == 2 and "--nodes n2;id: a comma-separated list of Slurm node names" in out


def test_without_a_shared_root_each_node_gets_its_own_copy(slurm_site: SlurmSite) -> None:
    slurm_site.config(shared=False)
    code, out = migrate(slurm_site, "--json")
    assert code == 0, out
    for n in ("n1", "n2"):
        assert (slurm_site.node_root(n) / MAIN).read_bytes() == (slurm_site.tree / MAIN).read_bytes()
        assert rows(out)[f"{n} (srun)"]["status"] == "ok"
    assert not list((slurm_site.dir / "local" / "login" / "verl_Uky" / ".patchctl").glob("spread-*"))
    # a node's copy altered there is put back by the next run, from the login node's verified tree
    (slurm_site.node_root("n2") / MAIN).write_text("edited on the node\n")
    code, out = migrate(slurm_site, "--json")
    assert code == 0, out
    assert (slurm_site.node_root("n2") / MAIN).read_bytes() == (slurm_site.tree / MAIN).read_bytes()

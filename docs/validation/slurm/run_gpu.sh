#!/usr/bin/env bash
# Issue 36 req 6 on nvidia-h200-x2: Slurm (Debian 12's slurm-wlm 22.05 and munge, carried in as
# .deb files) with gres/gpu for the two GPUs, then validate --profile smoke-vllm as a two-node job
# (one GPU each) and as a one-node job with two GPUs (gpu_proof.py). On nvidia-h200 (one GPU) the
# cluster is one node with that GPU and the job one node x 1 GPU (gpu_proof.py's "one"); the GPUs
# are the machine's /dev/nvidiaN files (GPU_FILES overrides). Run from a copy of the branch's
# tree (the device sends the session's checkout; the branch travels in a carried folder). $OUT
# receives the logs and results.tar.gz.
#
#   run_gpu.sh probe              the machine's OS, the GPUs' device files, Slurm unpacked and started
#   run_gpu.sh part DIR [probe]   one part of the vLLM bundle to /tmp/vparts (../vllm-smoke/run_gpu.sh
#                                 part); with probe, first the machine's OS, GPUs' device files and
#                                 Slurm unpacked and started once (slurmd -C, ldd: what is missing)
#   run_gpu.sh proof DIR          DIR holds the last part: the bundle set up (../vllm-smoke/run_gpu.sh
#                                 setup), Slurm, munge, sshd and rsync from the carried packages, then
#                                 gpu_proof.py (ONLY=pair|big runs one job)
#   run_gpu.sh warm               on a machine left warm with that bundle set up: a fresh tree, then
#                                 Slurm and the proof as above (one call)
#
# SLURM_DEBS: the folder of Slurm's and munge's packages and the libraries they need;
# SSH_DEBS: the folder of openssh-server/-client and rsync (as ../vllm-smoke/run_gpu.sh has them).
set -uo pipefail
MODE=${1:?usage: run_gpu.sh part|proof DIR}
OUT=${OUT:-/tmp/s36-out}
mkdir -p "$OUT"
S=$(date +%s.%N)
say() { printf "[%6.1f s] %s\n" "$(awk -v a="$(date +%s.%N)" -v b="$S" 'BEGIN{print a-b}')" "$*"; }
SMOKE=$PWD/docs/validation/vllm-smoke/run_gpu.sh
# the machine's GPUs' device files (/dev/nvidia0 ...; not nvidiactl, nvidia-uvm), as gpu_proof.py's --gpu
GPU_FILES=${GPU_FILES:-$(ls /dev/nvidia[0-9]* 2>/dev/null | sort -V | tr '\n' ' ')}
GPU_ARGS=()
for g in $GPU_FILES; do GPU_ARGS+=(--gpu "$g"); done
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

# the libraries of the unpacked packages whose soname the image lacks, into LIBDIR (/usr/local/lib,
# then ldconfig): a library the image has is never shadowed, and a file already there is never
# written over. Judged by file name before, Debian 12's libtinfo.so.6.4, libreadline, libsystemd,
# libgcrypt, libpam... went into /usr/local/lib ahead of the image's own; a second call's `cp -a`
# then rewrote the libtinfo that the running bash had mapped, and that bash crashed (SIGSEGV at the
# end of the proof, nvidia-h200, 2026-11-29)
libs_in() {
    local from=$1 dest=${LIBDIR:-/usr/local/lib} f soname known
    command -v readelf >/dev/null || { echo "libs_in: readelf not found (binutils)"; return 1; }
    known=$(ldconfig -p)
    for f in "$from"/usr/lib/x86_64-linux-gnu/*.so.* "$from"/lib/x86_64-linux-gnu/*.so.*; do
        [ -f "$f" ] && [ ! -L "$f" ] || continue
        soname=$(readelf -d "$f" 2>/dev/null | sed -n 's/.*Library soname: \[\(.*\)\].*/\1/p')
        [ -n "$soname" ] || continue
        awk -v s="$soname" '$1 == s {found = 1} END {exit !found}' <<< "$known" && continue
        [ -e "$dest/$(basename "$f")" ] || cp -a "$f" "$dest/"
        [ -e "$dest/$soname" ] || ln -s "$(basename "$f")" "$dest/$soname"
    done
    [ -n "${LIBDIR:-}" ] || ldconfig 2>/dev/null
}

# a package's files into ROOT, keeping ROOT's links to folders: Debian 12's slurmd, slurmctld and
# munge ship ./lib/systemd/..., and `dpkg-deb -x` (tar without --keep-directory-symlink) turned a
# merged-/usr image's /lib -> usr/lib link into a folder holding only systemd/: /lib/x86_64-linux-gnu
# vanished, gcc's link of Triton's driver module failed (ld: cannot find /lib/x86_64-linux-gnu/libc.so.6)
# and the trainer exited 1 (nvidia-h200, 2026-11-29)
unpack_root() {
    dpkg-deb --fsys-tarfile "$1" | tar -x -C "$2" --keep-directory-symlink --no-same-owner
}

slurm_in() {
    say "Slurm and munge from the carried Debian packages"
    # Slurm's and munge's own packages into / (their own files: binaries, plugins, libslurmfull;
    # slurmd runs slurmstepd from the path it was built with, /usr/sbin)
    for d in "$SLURM_DEBS"/slurm*.deb "$SLURM_DEBS"/munge_*.deb "$SLURM_DEBS"/libmunge2_*.deb; do
        unpack_root "$d" / || { say "cannot unpack $d"; return 1; }
    done
    # what the packages' postinst does with update-alternatives: slurmd, slurmctld and slurmstepd
    for b in slurmd slurmctld slurmstepd; do [ -e /usr/sbin/$b ] || ln -s $b-wlm /usr/sbin/$b; done
    rm -rf /tmp/slurm-libs && mkdir -p /tmp/slurm-libs
    for d in "$SLURM_DEBS"/lib*.deb; do dpkg-deb -x "$d" /tmp/slurm-libs; done
    libs_in /tmp/slurm-libs
    local missing
    missing=$(ldd /usr/sbin/slurmd /usr/sbin/slurmctld /usr/sbin/slurmstepd /usr/sbin/munged /usr/bin/srun \
        /usr/bin/sbatch /usr/lib/x86_64-linux-gnu/slurm-wlm/*.so 2>&1 | grep "not found" | sort -u)
    [ -z "$missing" ] || { echo "missing libraries: $missing"; return 1; }
    /usr/sbin/slurmd -V; /usr/sbin/munged -V 2>&1 | head -1
}

sshd_in() {
    say "sshd and rsync from the carried Debian packages"
    rm -rf /tmp/ssh-sys && mkdir -p /tmp/ssh-sys /usr/local/bin /usr/local/sbin /usr/local/lib/openssh
    for d in "$SSH_DEBS"/*.deb; do dpkg-deb -x "$d" /tmp/ssh-sys; done
    cp --update=none /tmp/ssh-sys/usr/bin/* /usr/local/bin/ 2>/dev/null
    cp --update=none /tmp/ssh-sys/usr/sbin/sshd /usr/local/sbin/
    cp --update=none /tmp/ssh-sys/usr/lib/openssh/* /usr/local/lib/openssh/ 2>/dev/null
    libs_in /tmp/ssh-sys
    id sshd >/dev/null 2>&1 || useradd -r -M -d /run/sshd -s /usr/sbin/nologin sshd 2>/dev/null \
        || echo 'sshd:x:105:65534::/run/sshd:/usr/sbin/nologin' >> /etc/passwd
    export PATCHCTL_SSHD=/usr/local/sbin/sshd
    /usr/local/sbin/sshd -V 2>&1 | head -1; rsync --version | head -1; true  # head ends the pipes early: pipefail
}

# which cgroup.conf lets slurmd start on this machine (exported for gpu_proof.py): cgroup/v1, else
# cgroup/v2 without systemd (a VM with cgroup2 and no dbus)
slurm_check() {
    local conf
    rm -f /tmp/s36-cgroup
    for conf in "CgroupPlugin=cgroup/v1" "CgroupPlugin=cgroup/v2;IgnoreSystemd=yes"; do
        if SLURM_CGROUP_CONF="$conf" GPU_FILES="$GPU_FILES" python3 - <<'PY'
import dataclasses, os, sys, tempfile, time
sys.path[:0] = ["tests/slurm", "tests/migrate", "benchmarks"]
from pathlib import Path
sys.path[:0] = ["docs/validation/slurm"]
from slurm_harness import SlurmCluster
from gpu_proof import SHAPES, layout_for
conf = os.environ["SLURM_CGROUP_CONF"].replace(";", "\n") + "\n"
t0 = time.monotonic()
base = Path(tempfile.mkdtemp()) / "s"
layout, jobs = layout_for(os.environ["GPU_FILES"].split(), int(os.environ.get("NODE_CPUS", "16")), True, conf)
layout = dataclasses.replace(layout, idle_timeout=10)
try:
    c = SlurmCluster(base, layout)
except RuntimeError as exc:
    print(f"cgroup.conf {conf!r}: {exc}"); os.system(f"tail -n 4 {base}/log/n1.out"); sys.exit(1)
try:
    print(f"cgroup.conf {conf!r}: slurm up in {time.monotonic() - t0:.1f} s: {c.node_states()}")
    for job in jobs:
        part, nodes, gpus = SHAPES[job]
        a = ["-p", part, f"-N{nodes}", f"--gpus-per-node={gpus}"]
        r = c.run("srun", *a, "sh", "-c", "echo $SLURMD_NODENAME CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES "
                  "ROCR_VISIBLE_DEVICES=$ROCR_VISIBLE_DEVICES", check=False)
        print(" ".join(a), "->", r.stdout.strip().replace("\n", " | "), r.stderr.strip()[-300:])
finally:
    c.close()
PY
        then echo "$conf" > /tmp/s36-cgroup; return 0; fi
    done
    return 1
}

probe() {
    head -3 /etc/os-release; uname -r; nproc; python3 --version
    ls -l /dev/nvidia* 2>&1 | head -8
    nvidia-smi -L 2>&1; command -v nvidia-smi
    slurm_in || return 1
    # slurmd's view of this machine, then one real start: munged, slurmctld, three slurmd, an srun per shape
    /usr/sbin/slurmd -C 2>&1 | head -2
    python3 - <<'PY'
import sys, time
sys.path[:0] = ["tests/slurm", "tests/migrate"]
from pathlib import Path
import tempfile
from slurm_harness import Layout, SlurmCluster
t0 = time.monotonic()
c = SlurmCluster(Path(tempfile.mkdtemp()) / "s", Layout(
    {"n1": ("/dev/nvidia0",), "n2": ("/dev/nvidia1",), "n3": ("/dev/nvidia0", "/dev/nvidia1")}, 16,
    {"pair": ("n1", "n2"), "big": ("n3",)}, physical=True))
try:
    print(f"slurm up in {time.monotonic() - t0:.1f} s: {c.node_states()}")
    for a in (["-p", "pair", "-N2", "--gpus-per-node=1"], ["-p", "big", "-N1", "--gpus-per-node=2"]):
        r = c.run("srun", *a, "sh", "-c", "echo $SLURMD_NODENAME CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES; "
                  "nvidia-smi --query-gpu=uuid --format=csv,noheader", check=False)
        print(" ".join(a), "->", r.stdout.strip().replace("\n", " | "), r.stderr.strip()[-300:])
finally:
    c.close()
PY
}

case $MODE in
    probe) probe 2>&1 | tee "$OUT/probe.txt" ;;
    part)
        DIR=$(cd "${2:?part DIR}" && pwd)
        [ "${3:-}" = probe ] && { probe 2>&1 | tee "$OUT/probe.txt"; }
        bash "$SMOKE" part "$DIR"
        ;;
    proof)
        DIR=$(cd "${2:?proof DIR}" && pwd)
        # Slurm first: a machine where it cannot start costs no bundle set-up
        { slurm_in && slurm_check; } 2>&1 | tee "$OUT/slurm.log"
        [ -s /tmp/s36-cgroup ] || exit 1
        SLURM_CGROUP_CONF=$(cat /tmp/s36-cgroup); export SLURM_CGROUP_CONF
        bash "$SMOKE" setup "$DIR" 2>&1 | grep -E "rc=|done|unpacked|compiled|^ray |assets|missing|damaged|failed"
        {
            sshd_in || exit 1
            say "gpu_proof on $GPU_FILES: pair (2 nodes x 1 GPU) then big (1 node x 2 GPUs); with one GPU, one (1 node x 1 GPU)"
            PYTHONPATH=$PWD/src:/tmp/vsite timeout "${PROOF_LIMIT:-420}" python3 docs/validation/slurm/gpu_proof.py --tree /tmp/w/verl-0.9.1 \
                --out /tmp/s36res --profile smoke-vllm "${GPU_ARGS[@]}" --cpus "${NODE_CPUS:-16}" \
                --env "PYTHONPATH=$PWD/src:/tmp/vsite" --env RAY_memory_monitor_refresh_ms=0 \
                --timeout "${VALIDATE_TIMEOUT:-300}" ${ONLY:+--only $ONLY}
            say "proof done"
        } 2>&1 | tee "$OUT/proof.log"
        cp /tmp/s36res/validate-*.txt /tmp/s36res/summary.json "$OUT/" 2>/dev/null
        tar -czf "$OUT/results.tar.gz" -C /tmp/s36res . 2>/dev/null
        ;;
    warm)
        # a machine a session's earlier call left warm with the bundle set up (../vllm-smoke/run_gpu.sh
        # setup): a fresh tree from the release archive, uky applied and verified, then the proof
        [ -f /tmp/vsite/.complete ] && [ -f /tmp/verl-0.9.1.tar.gz ] || { echo "not warm: no bundle set up here"; exit 3; }
        {
            say "a fresh verl 0.9.1 tree: uky applied, verified"
            rm -rf /tmp/s36w && mkdir -p /tmp/s36w && tar --no-same-owner -xzf /tmp/verl-0.9.1.tar.gz -C /tmp/s36w
            T=/tmp/s36w/verl-0.9.1
            git -C $T init -q -b main && git -C $T add -A &&
                git -C $T -c user.name=patchctl -c user.email=patchctl@localhost commit -qm "verl 0.9.1 source release"
            PYTHONPATH=$PWD/src:/tmp/vsite python3 -m patchctl apply --target $T > /tmp/s36-apply.txt 2>&1; echo "apply rc=$?"
            PYTHONPATH=$PWD/src:/tmp/vsite python3 -m patchctl verify --target $T 2>&1 | tail -n 1
            slurm_in && slurm_check && sshd_in || exit 1
            SLURM_CGROUP_CONF=$(cat /tmp/s36-cgroup); export SLURM_CGROUP_CONF
            say "gpu_proof on $GPU_FILES: pair (2 nodes x 1 GPU) then big (1 node x 2 GPUs); with one GPU, one (1 node x 1 GPU)"
            PYTHONPATH=$PWD/src:/tmp/vsite timeout "${PROOF_LIMIT:-420}" python3 docs/validation/slurm/gpu_proof.py --tree $T \
                --out /tmp/s36res --profile smoke-vllm "${GPU_ARGS[@]}" --cpus "${NODE_CPUS:-16}" \
                --env "PYTHONPATH=$PWD/src:/tmp/vsite" --env RAY_memory_monitor_refresh_ms=0 \
                --timeout "${VALIDATE_TIMEOUT:-300}" ${ONLY:+--only $ONLY}
            say "proof done"
        } 2>&1 | tee "$OUT/proof.log"
        cp /tmp/s36res/validate-*.txt /tmp/s36res/summary.json "$OUT/" 2>/dev/null
        tar -czf "$OUT/results.tar.gz" -C /tmp/s36res . 2>/dev/null
        ;;
    *) echo "unknown mode $MODE"; exit 2 ;;
esac

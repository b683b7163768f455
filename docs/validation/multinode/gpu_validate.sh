#!/usr/bin/env bash
# The GPU proof of `patchctl validate` (issue 12) on nvidia-h200-x2: two loopback ssh hosts on one
# machine (node1 at 127.0.0.2 with GPU 0, node2 at 127.0.0.3 with GPU 1), `patchctl migrate` then
# `patchctl validate --profile smoke` as a 2-node Ray cluster; then one host holding both GPUs;
# then `--compare` (benchmarks/bench_validate.py drives the three). Run from the repository root
# with .gpu/ holding site.tar.xz (../shared/gpu/build_bundle.sh), verl-0.5.0.tar.gz and debs/
# (`apt-get download openssh-server openssh-client rsync libpopt0 libxxhash0 libwrap0 libnsl2 libtirpc3` on Debian
# bookworm: the image has neither sshd nor rsync). Results go to $OUT/multinode.
set -uo pipefail
OUT=${OUT:-/tmp/patchctl-gpu-out}
mkdir -p "$OUT"
# NVLink multicast stays off in this process and, through the cluster env, in every process
# validate starts on the hosts (an ssh login does not inherit this environment)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
S=$(date +%s.%N)
say() { printf "[%6.1f s] %s\n" "$(awk -v a="$(date +%s.%N)" -v b="$S" "BEGIN{print a-b}")" "$*"; }

say "sshd and rsync from the carried Debian packages (into /usr/local: nothing of / is replaced)"
mkdir -p /tmp/sys && for d in .gpu/debs/*.deb; do dpkg-deb -x "$d" /tmp/sys || dpkg -x "$d" /tmp/sys; done
mkdir -p /usr/local/bin /usr/local/sbin /usr/local/lib
cp --update=none /tmp/sys/usr/bin/* /usr/local/bin/ 2>/dev/null; cp --update=none /tmp/sys/usr/sbin/sshd /usr/local/sbin/
cp --update=none /tmp/sys/usr/lib/x86_64-linux-gnu/*.so* /tmp/sys/lib/x86_64-linux-gnu/*.so* /usr/local/lib/ 2>/dev/null
ldconfig
id sshd >/dev/null 2>&1 || useradd -r -M -d /run/sshd -s /usr/sbin/nologin sshd 2>/dev/null \
    || echo 'sshd:x:105:65534::/run/sshd:/usr/sbin/nologin' >> /etc/passwd
missing=$(ldd /usr/local/sbin/sshd /usr/local/bin/ssh /usr/local/bin/rsync 2>&1 | grep "not found" | sort -u)
[ -n "$missing" ] && { echo "missing libraries: $missing"; exit 1; }
export PATCHCTL_SSHD=/usr/local/sbin/sshd
/usr/local/sbin/sshd -V 2>&1 | head -1; rsync --version | head -1

say "unpack the package bundle"
mkdir -p /tmp/site && tar -xJf .gpu/site.tar.xz -C /tmp/site
python3 -m compileall -q -j 0 /tmp/site >/dev/null 2>&1
export PYTHONPATH=$PWD/src:/tmp/site
patchctl() { python3 -c 'import sys; sys.argv[0] = "patchctl"; from patchctl.cli.main import main; main()' "$@"; }

say "verl 0.5.0, patched and verified"
mkdir -p /tmp/w && tar -xzf .gpu/verl-0.5.0.tar.gz -C /tmp/w
T=/tmp/w/verl-0.5.0
git -C "$T" init -q -b main && git -C "$T" add -A \
    && git -C "$T" -c user.name=patchctl -c user.email=patchctl@localhost commit -qm "verl 0.5.0 source release"
patchctl apply --target "$T" --patchset uky --patchset verl05-nofa-hf > "$OUT/apply.txt" 2>&1; echo "apply rc=$?"
patchctl verify --target "$T" --patchset uky --patchset verl05-nofa-hf > "$OUT/verify.txt" 2>&1; echo "verify rc=$?"
tail -n 1 "$OUT/verify.txt"
python3 -m compileall -q -j 0 "$T/verl" >/dev/null 2>&1
nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader

say "migrate + validate: two nodes x one GPU, then one node x two GPUs, then --compare"
python3 benchmarks/bench_validate.py --tree "$T" --out "$OUT/multinode" \
    --env "PYTHONPATH=$PWD/src:/tmp/site" --env "RAY_memory_monitor_refresh_ms=0" "$@" 2>&1 | tee "$OUT/bench.txt"
say "done"
sleep 3
echo "Ray processes left running (3 s after the last validate):"; ps -eo pid,ppid,etimes,args | grep "[r]aylet\|[g]cs_server" || echo "  none"
# the device returns at most 8 files: the runs' folders travel as one archive
tar -czf "$OUT/multinode.tgz" -C "$OUT" multinode && rm -rf "$OUT/multinode"

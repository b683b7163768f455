#!/usr/bin/env bash
# On the CPU machine: what the GPU proof carries, into DEST (an ignored folder of the checkout the
# device sends): DEST/wt, the branch's files the proof runs (git archive of HEAD), and DEST/debs,
# Debian 12's Slurm and munge packages with the libraries they need (apt-get download).
set -euo pipefail
DEST=${1:?usage: pack.sh DEST}
mkdir -p "$DEST/debs"
rm -rf "$DEST/wt" && mkdir -p "$DEST/wt"
git archive HEAD src benchmarks tests/slurm tests/migrate tests/validate/standin tests/validate/stub_bin \
    tests/realparts.py tests/clirun.py docs/validation/slurm docs/validation/vllm/make_assets.py \
    docs/validation/vllm-smoke/run_gpu.sh docs/validation/repro | tar -x -C "$DEST/wt"
(cd "$DEST/debs" && apt-get download slurmd slurmctld slurm-client slurm-wlm-basic-plugins munge libmunge2 \
    libhwloc15 liblz4-1 libnuma1 libpam0g libreadline8 libtinfo6 libdbus-1-3 libjson-c5 liblua5.1-0 libyaml-0-2 \
    libgcrypt20 libgpg-error0 libbz2-1.0 libsystemd0 libudev1 2>&1 | grep -v "^Get:" || true)
du -sh "$DEST/wt" "$DEST/debs"

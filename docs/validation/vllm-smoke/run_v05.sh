#!/usr/bin/env bash
# Issue 21's -v05 sabotage rows on the GPU test machine: verl 0.5.0 (uky + verl05-nofa-hf) on the
# HuggingFace rollout, bundle of ../hf_bundle.sh (Ray 2.60), then benchmarks/sabotage.py with
# --tree-hf for the named rows (default: a healthy smoke, adv-sign-v05, opt-skip-v05). Run from a
# copy of the branch's tree (the carried .gpu/wt); DIR holds site.tar.xz and verl-0.5.0.tar.gz.
#
#   run_v05.sh DIR [ROW ...]
set -uo pipefail
DIR=$(cd "${1:?usage: run_v05.sh DIR [ROW ...]}" && pwd); shift
ROWS=("$@"); [ ${#ROWS[@]} -gt 0 ] || ROWS=(adv-sign-v05 opt-skip-v05)
OUT=${OUT:-/tmp/v05-out}
mkdir -p "$OUT"
S=$(date +%s.%N)
say() { printf "[%6.1f s] %s\n" "$(awk -v a="$(date +%s.%N)" -v b="$S" 'BEGIN{print a-b}')" "$*"; }
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 RAY_USAGE_STATS_ENABLED=0 RAY_memory_monitor_refresh_ms=0
patchctl() { python3 -c 'import sys; sys.argv[0] = "patchctl"; from patchctl.cli.main import main; main()' "$@"; }
T=/tmp/w5/verl-0.5.0
if [ ! -f /tmp/site/.complete ]; then
    rm -rf /tmp/site && mkdir -p /tmp/site && tar -xJf "$DIR/site.tar.xz" -C /tmp/site || { say "unpack failed"; exit 3; }
    python3 -m compileall -q -j 0 /tmp/site >/dev/null 2>&1; touch /tmp/site/.complete
    say "bundle unpacked and byte-compiled"
fi
export PYTHONPATH=$PWD/src:/tmp/site
python3 -c 'import ray, transformers; print("ray", ray.__version__, "| transformers", transformers.__version__)' 2>&1 | tail -n 1
rm -rf /tmp/w5 && mkdir -p /tmp/w5 && tar -xzf "$DIR/verl-0.5.0.tar.gz" -C /tmp/w5
git -C "$T" init -q -b main && git -C "$T" add -A &&
    git -C "$T" -c user.name=patchctl -c user.email=patchctl@localhost commit -qm "verl 0.5.0 source release"
patchctl apply --target "$T" --patchset uky --patchset verl05-nofa-hf > "$OUT/v05-apply.txt" 2>&1; echo "apply rc=$?"
patchctl verify --target "$T" --patchset uky --patchset verl05-nofa-hf > "$OUT/v05-verify.txt" 2>&1; echo "verify rc=$?"
tail -n 1 "$OUT/v05-verify.txt"
python3 -m compileall -q -j 0 "$T/verl" >/dev/null 2>&1
say "tree ready"
only=(); for r in "${ROWS[@]}"; do only+=(--only "$r"); done
# --tree is sabotage.py's verl 0.9.1 tree; only the -v05 rows run here, so the 0.5.0 tree stands in
python3 "$PWD/benchmarks/sabotage.py" --tree "$T" --tree-hf "$T" --python python3 --out /tmp/sab5 \
    --timeout "${V05_TIMEOUT:-300}" "${only[@]}" 2>&1 | tee "$OUT/v05-suite.txt" | grep -v "^      "
say "suite done"
for r in "${ROWS[@]}"; do cp /tmp/sab5/$r/run/report.json "$OUT/v05-$r-report.json" 2>/dev/null; done
cp /tmp/sab5/sabotage.json "$OUT/v05-sabotage.json" 2>/dev/null

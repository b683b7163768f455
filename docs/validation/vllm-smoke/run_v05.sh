#!/usr/bin/env bash
# Issue 21's -v05 rows on the GPU test machine: verl 0.5.0 (uky + verl05-nofa-hf) on the
# HuggingFace rollout, bundle of ../hf_bundle.sh (Ray 2.60), then benchmarks/sabotage.py with
# --tree-hf, one row at a time (default: healthy-v05-1, opt-skip-v05, adv-sign-v05). Run from a
# copy of the branch's tree (the carried .gpu/wt); DIR holds site.tar.xz and verl-0.5.0.tar.gz.
# The bundle and the patched tree are made once per machine (a later call on the same warm
# machine reuses them). What comes back (the device returns at most 8 files): $OUT/v05-res.tar.xz
# with each row's report, train log and suite output, and $OUT/v05-table.md, v05_table.py's table of
# this call's rows.
#
#   run_v05.sh DIR [ROW ...]      ROW: a sabotage.py set-up (healthy-v05-N, opt-skip-v05, adv-sign-v05),
#                                 or cold:ROW to drop the page cache and torch's caches first
set -uo pipefail
DIR=$(cd "${1:?usage: run_v05.sh DIR [ROW ...]}" && pwd); shift
ROWS=("$@"); [ ${#ROWS[@]} -gt 0 ] || ROWS=(healthy-v05-1 opt-skip-v05 adv-sign-v05)
OUT=${OUT:-/tmp/v05-out}
RES=/tmp/v05res/$(date +%H%M%S)
mkdir -p "$OUT" "$RES"
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
if [ ! -f /tmp/w5/.ready ]; then
    rm -rf /tmp/w5 && mkdir -p /tmp/w5 && tar -xzf "$DIR/verl-0.5.0.tar.gz" -C /tmp/w5
    git -C "$T" init -q -b main && git -C "$T" add -A &&
        git -C "$T" -c user.name=patchctl -c user.email=patchctl@localhost commit -qm "verl 0.5.0 source release"
    patchctl apply --target "$T" --patchset uky --patchset verl05-nofa-hf > "$RES/v05-apply.txt" 2>&1; echo "apply rc=$?"
    patchctl verify --target "$T" --patchset uky --patchset verl05-nofa-hf > "$RES/v05-verify.txt" 2>&1
    rc=$?; echo "verify rc=$rc"; tail -n 1 "$RES/v05-verify.txt"
    [ $rc -eq 0 ] || exit 4
    python3 -m compileall -q -j 0 "$T/verl" >/dev/null 2>&1
    touch /tmp/w5/.ready
    say "tree ready"
fi
for row in "${ROWS[@]}"; do
    r=${row#cold:}
    if [ "$row" != "$r" ]; then
        rm -rf ~/.triton ~/.cache/torch /tmp/torchinductor_*; sync
        if (echo 3 > /proc/sys/vm/drop_caches) 2>/dev/null; then say "page cache dropped before $r"
        else say "cannot drop the page cache here: $r is not cold"; fi
    fi
    say "$r"
    # --tree is sabotage.py's verl 0.9.1 tree; only the HF rows run here, so the 0.5.0 tree stands in
    python3 "$PWD/benchmarks/sabotage.py" --tree "$T" --tree-hf "$T" --python python3 --out "/tmp/sab5/$r" \
        --timeout "${V05_TIMEOUT:-300}" --only "$r" 2>&1 | tee "$RES/v05-$r-suite.txt" | grep -v "^      \|^\$ "
    cp "/tmp/sab5/$r/$r/run/report.json" "$RES/v05-$r-report.json" 2>/dev/null || say "$r: no report"
    cp "/tmp/sab5/$r/$r/run/train.log" "$RES/v05-$r-train.log" 2>/dev/null
done
say "rows done"
python3 "$PWD/docs/validation/vllm-smoke/v05_table.py" "$RES"/v05-*-report.json | tee "$OUT/v05-table.md"
tar -cJf "$OUT/v05-res.tar.xz" -C "$RES" .

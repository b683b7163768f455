#!/usr/bin/env bash
# gpu15 call B (the warm machine of call A): the Ctrl-C at "head up at" unless call A did it; run 3
# weights-partial sabotage; the Ctrl-C after step 1 if time is left. END: the call's end (epoch s).
# $OUT gets callB.log (the command's tee), oB.tar.gz (small results), v21resB.tar.gz (the suite's runs)
set -uo pipefail
: "${END:?END}"
START=$(date +%s); FINAL=$OUT; O=/tmp/g15/oB
say() { echo "[$(date -u +%H:%M:%S) +$(( $(date +%s) - START ))s, $(( END - $(date +%s) ))s left] $*"; }
pack() { tar -czf $FINAL/oB.tar.gz -C $O --exclude=results.tar.gz --exclude='*train.log' . 2>/dev/null; cp $O/results.tar.gz $FINAL/v21resB.tar.gz 2>/dev/null; }
[ -f /tmp/vassets/patchctl.toml ] && [ -d /tmp/g15/wt ] || { say "a fresh machine: no setup state"; exit 3; }
rm -rf /tmp/g15/gpu15 $O && mkdir -p $O && cp -r .gpu/gpu15 /tmp/g15/gpu15 && cd /tmp/g15/wt
export OUT=$O
export PATCHCTL_SSHD=/usr/local/sbin/sshd NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONPATH=$PWD/src:/tmp/vsite PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 RAY_USAGE_STATS_ENABLED=0 VLLM_NO_USAGE_STATS=1
say "GPU apps at start:"; nvidia-smi --query-compute-apps=pid,process_name --format=csv
python3 -m ray.scripts.scripts stop --force >/dev/null 2>&1
ctrlc() {  # NAME TRIGGER
    timeout $(( END - $(date +%s) - 5 )) python3 /tmp/g15/gpu15/ctrlc.py --tree /tmp/w/verl-0.9.1 --out $O/$1 \
        --env PYTHONPATH=$PWD/src:/tmp/vsite --env RAY_memory_monitor_refresh_ms=0 --trigger $2 --wait 40 2>&1 | tee $O/$1.log
    pack
}
[ -f /tmp/g15/ctrlc-head-done ] || { say "run 4a: Ctrl-C at head up"; ctrlc ctrlc-a head; }
if [ $(( END - $(date +%s) )) -ge 260 ]; then
    say "run 3: sabotage weights-partial"
    SUITE_TIMEOUT=240 bash docs/validation/vllm-smoke/run_gpu.sh suite weights-partial
    say "run 3 done"; pack
else say "run 3 skipped: too little time"; fi
if [ $(( END - $(date +%s) )) -ge 170 ]; then say "run 4b: Ctrl-C after step 1"; ctrlc ctrlc-b step; fi
pack
say "call B done"

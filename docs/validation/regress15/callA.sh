#!/usr/bin/env bash
# gpu15 call A: setup; run 1 validate (smoke-vllm, 1 loopback host x 1 GPU); run 2 healthy train +
# --baseline judge; then, if time is left, the Ctrl-C at "head up at". END: the call's end (epoch s).
# $OUT gets callA.log (the command's tee), oA.tar.gz (small results), v21res.tar.gz (validate's run dir)
set -uo pipefail
: "${END:?END}"
ROOT=$PWD; START=$(date +%s); FINAL=$OUT; O=/tmp/g15/oA
say() { echo "[$(date -u +%H:%M:%S) +$(( $(date +%s) - START ))s, $(( END - $(date +%s) ))s left] $*"; }
pack() { tar -czf $FINAL/oA.tar.gz -C $O --exclude=results.tar.gz . 2>/dev/null; cp $O/results.tar.gz $FINAL/v21res.tar.gz 2>/dev/null; }
rm -rf /tmp/g15 && mkdir -p /tmp/g15/wt $O && tar --exclude=./.gpu -cf - . | tar -xf - -C /tmp/g15/wt
cp -r .gpu/repro40/debs /tmp/g15/debs && cp -r .gpu/gpu15 /tmp/g15/gpu15
cd /tmp/g15/wt
export OUT=$O
say "tree copied to /tmp/g15/wt ($(du -sm . | cut -f1) MiB); setup"
bash docs/validation/vllm-smoke/run_gpu.sh setup $ROOT/.gpu/repro40/p3
[ -f /tmp/vassets/patchctl.toml ] || { say "setup failed"; pack; exit 3; }
say "run 1: validate (migrate + validate one --profile smoke-vllm)"
VALIDATE_TIMEOUT=300 bash docs/validation/vllm-smoke/run_gpu.sh validate
say "run 1 done"
python3 /tmp/g15/gpu15/summ.py /tmp/v21res/validate/one-node/validate.json /tmp/v21res/validate/one-node/report.json | tee $O/summary.txt
pack
say "run 2: healthy train"
MIN_LEFT=170 TRAIN_TIMEOUT=240 bash docs/validation/repro/run_gpu.sh train h15-healthy:0
python3 /tmp/g15/gpu15/summ.py /tmp/r40res/runs/h15-healthy-report.json | tee -a $O/summary.txt
pc() { PYTHONPATH=$PWD/src:/tmp/vsite python3 -c 'import sys; sys.argv[0] = "patchctl"; from patchctl.cli.main import main; main()' "$@"; }
for f in /tmp/r40res/runs/h15-healthy-report.json /tmp/v21res/validate/one-node/report.json; do
    [ -f "$f" ] || { echo "== $f: missing"; continue; }
    echo "== patchctl validate $f --baseline docs/validation/repro/runs/"
    pc validate "$f" --baseline docs/validation/repro/runs/ > /tmp/g15/judge.out 2>&1; rc=$?
    tail -n 6 /tmp/g15/judge.out; echo "rc=$rc"
done 2>&1 | tee $O/judge.txt
pack
say "judged"
if [ $(( END - $(date +%s) )) -ge 110 ]; then
    say "run 4a: Ctrl-C at head up"
    export PATCHCTL_SSHD=/usr/local/sbin/sshd NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
    export PYTHONPATH=$PWD/src:/tmp/vsite PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 RAY_USAGE_STATS_ENABLED=0 VLLM_NO_USAGE_STATS=1
    timeout $(( END - $(date +%s) - 5 )) python3 /tmp/g15/gpu15/ctrlc.py --tree /tmp/w/verl-0.9.1 --out $O/ctrlc-a \
        --env PYTHONPATH=$PWD/src:/tmp/vsite --env RAY_memory_monitor_refresh_ms=0 --trigger head --wait 40 2>&1 | tee $O/ctrlc-a.log
    [ -f $O/ctrlc-a/ctrlc.json ] && touch /tmp/g15/ctrlc-head-done
    pack
fi
say "call A done"

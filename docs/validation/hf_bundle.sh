#!/usr/bin/env bash
# A copy of the shared ../shared/gpu/build_bundle.sh (the HF-path bundle of docs/validation/gpu_smoke.sh) with Ray moved.
# Builds a flat site-packages tree, packed as one tar.xz, with the Python packages that verl 0.5.0
# (GRPO with the HuggingFace rollout) and patchctl itself need on the GPU test machine, whose image
# has Python 3.12, torch 2.11+cu130, numpy 2, pandas 3, pyarrow, accelerate, peft, click, rich,
# pyyaml, but no ray, hydra, tensordict, datasets, libcst, gitpython and no network.
#
# usage: docs/validation/hf_bundle.sh OUT_DIR        (OUT_DIR must be git-ignored; carry it)
# writes OUT_DIR/site.tar.xz (about 33 MB) and OUT_DIR/PACKAGES.txt. Wheels are cached in
# ${PATCHCTL_GPU_CACHE:-$HOME/.cache/patchctl-gpu-bundle-ray260}; a rebuild takes under a minute.
set -euo pipefail
OUT=${1:?usage: build_bundle.sh OUT_DIR}
DL=${PATCHCTL_GPU_CACHE:-$HOME/.cache/patchctl-gpu-bundle-ray260}
SITE=$(mktemp -d)
trap 'rm -rf "$SITE"' EXIT
mkdir -p "$DL" "$OUT"
OUT=$(cd "$OUT" && pwd)

PLAT="--python-version 3.12 --implementation cp --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64"
dl() { python3 -m pip download -q --no-deps --only-binary=:all: $PLAT -d "$DL" "$@"; }

# verl 0.5.0 runtime deps missing from the image (versions proven together on an H200, 2026-11-21, with
# Ray 2.49.2; Ray moved to 2.60.0 on 2026-11-24: 2.49.2 ignores RAY_AUTH_MODE=token, issue 24. Ray
# 2.60 with verl 0.5.0 ran on an H100 on 2026-11-24: vllm-smoke/run_v05.sh. aiohttp: Ray 2.60 asks >= 3.14.4)
dl ray==2.60.0 aiohttp==3.14.5 tensordict==0.9.1 pyvers==0.1.0 orjson==3.11.3 importlib_metadata==8.7.0 \
   hydra-core==1.3.2 omegaconf==2.3.0 codetiming==1.4.0 torchdata==0.11.0 \
   datasets==4.0.0 dill==0.3.8 multiprocess==0.70.16 fsspec==2025.3.0 \
   transformers==4.53.3 tokenizers==0.21.4 huggingface_hub==0.34.4 \
   jsonschema==4.25.1 jsonschema-specifications==2025.9.1 referencing==0.36.2 rpds-py==0.27.1
# patchctl's own runtime deps
dl libcst gitpython gitdb smmap
# antlr4-python3-runtime 4.9.3 (omegaconf 2.3) and pylatexenc 2.10 (verl's math reward) are published
# only as source releases: build pure wheels
ls "$DL"/antlr4_python3_runtime-4.9.3-*.whl >/dev/null 2>&1 || \
  python3 -m pip wheel -q --no-deps -w "$DL" antlr4-python3-runtime==4.9.3
ls "$DL"/pylatexenc-2.10-*.whl >/dev/null 2>&1 || python3 -m pip wheel -q --no-deps -w "$DL" pylatexenc==2.10

for w in "$DL"/*.whl; do python3 -m zipfile -e "$w" "$SITE"; done
# unzipping drops exec bits: restore them (ray's gcs_server, raylet, ...)
python3 - "$SITE" "$DL" <<'PY'
import glob, os, sys, zipfile
site, dl = sys.argv[1], sys.argv[2]
for w in glob.glob(os.path.join(dl, "*.whl")):
    for i in zipfile.ZipFile(w).infolist():
        mode = (i.external_attr >> 16) & 0o777
        if mode & 0o111 and os.path.exists(os.path.join(site, i.filename)):
            os.chmod(os.path.join(site, i.filename), mode)
PY
# dead weight: Java worker jar (30 MB), dashboard web client, C++ headers, tests
rm -rf "$SITE"/ray/jars "$SITE"/ray/dashboard/client/build "$SITE"/ray/cpp/include "$SITE"/ray/tests
find "$SITE" -name __pycache__ -prune -exec rm -rf {} +
(cd "$SITE" && ls -d *.dist-info | sed 's/\.dist-info$//' | sort) > "$OUT/PACKAGES.txt"
(cd "$SITE" && tar -cf - . | xz -T0 -6 > "$OUT/site.tar.xz.tmp") && mv "$OUT/site.tar.xz.tmp" "$OUT/site.tar.xz"
du -h "$OUT/site.tar.xz"

#!/usr/bin/env bash
# Builds the package bundle of the verl 0.9.1 + vLLM 0.24.0 GPU run and splits it into parts that
# each fit one call of the GPU machine (at most 64 MiB travels per call).
#
# The GPU image has Python 3.12, torch 2.11.0+cu130, torchvision 0.26, torchaudio 2.11, triton 3.6,
# numpy 2.5, pandas 3, pyarrow, transformers 5.17, cupy, opencv, ... but no vLLM, Ray, hydra,
# tensordict, pydantic, fastapi, zmq, and no network. The bundle holds exactly the packages of
# packages.txt (beside this script): what the run imports and the image lacks, as found by
# trace_imports.py, pinned. It is one flat site-packages tree, packed as tar.xz and split.
#
# What is left out of the vllm wheel (279 MB, 637 MB unpacked), and why it is not needed here:
#   vllm_flash_attn/_vllm_fa2_C.abi3.so (190 MB): Hopper (H100/H200, sm_90) uses FlashAttention 3
#     (_vllm_fa3_C, kept); vLLM picks FA2 only on other GPUs or for ALiBi models.
#   _moe_C_stable_libtorch.abi3.so (45 MB): mixture-of-experts kernels; imported in a try block,
#     the tiny dense Qwen2 never calls them.
#   vllm-rs (37 MB): a Rust front-end binary; the run starts vLLM from Python.
#   _flashmla*_C, _qutlass_C, third_party/deep_gemm, third_party/fmha_sm100 and the CUTLASS
#     headers: MLA, FP4, DeepGEMM and Blackwell kernels, all imported in try blocks or lazily.
# xgrammar: its static library lib/libxgrammar.a (65 MB; the Python binding is a shared library).
# Ray: its Java jar, dashboard web client, C++ headers and tests.
#
# usage: docs/validation/vllm/build_bundle.sh OUT_DIR      (OUT_DIR git-ignored, e.g. .vllmb)
# writes OUT_DIR/parts/vsite.tar.xz.partNN (each < 60 MiB), OUT_DIR/SHA256SUMS, OUT_DIR/SIZES.txt
# and OUT_DIR/PACKAGES.txt. Wheels are cached in ${PATCHCTL_VLLM_CACHE:-$HOME/.cache/patchctl-vllm-bundle}.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${1:?usage: build_bundle.sh OUT_DIR}
DL=${PATCHCTL_VLLM_CACHE:-$HOME/.cache/patchctl-vllm-bundle}
PART_MB=${PART_MB:-58}
mkdir -p "$DL" "$OUT"
OUT=$(cd "$OUT" && pwd)
SITE=$OUT/vsite
rm -rf "$SITE" "$OUT/parts"
mkdir -p "$SITE" "$OUT/parts"

PLAT="--python-version 3.12 --implementation cp --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64
      --platform manylinux_2_27_x86_64 --platform manylinux_2_28_x86_64 --platform manylinux_2_31_x86_64
      --platform manylinux_2_34_x86_64 --platform manylinux_2_35_x86_64"
mapfile -t PINS < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' "$HERE/packages.txt" | grep -v '^$')
for pin in "${PINS[@]}"; do
    name=${pin%%==*}; ver=${pin##*==}
    glob=$(echo "$name" | tr 'A-Z-.' 'a-z__')
    if ls "$DL" | tr 'A-Z-.' 'a-z__' | grep -q "^${glob}-${ver//./_}-"; then continue; fi
    # binary wheels where they exist; a few (antlr4-python3-runtime 4.9.3, ...) are published only
    # as source releases: build a pure wheel of those
    python3 -m pip download -q --no-deps --only-binary=:all: $PLAT -d "$DL" "$pin" 2>/dev/null \
        || python3 -m pip wheel -q --no-deps -w "$DL" "$pin"
done

# unpack exactly the pinned wheels (the cache may hold other versions)
python3 - "$SITE" "$DL" "${PINS[@]}" <<'PY'
import os, re, sys, zipfile
site, dl, pins = sys.argv[1], sys.argv[2], sys.argv[3:]
norm = lambda s: re.sub(r"[-_.]+", "_", s).lower()
wheels = {}
for w in os.listdir(dl):
    if w.endswith(".whl"):
        name, ver = w.split("-")[:2]
        wheels[(norm(name), norm(ver))] = os.path.join(dl, w)
for pin in pins:
    name, ver = pin.split("==")
    w = wheels.get((norm(name), norm(ver)))
    if w is None:
        sys.exit(f"no wheel for {pin} in {dl}")
    with zipfile.ZipFile(w) as z:
        z.extractall(site)
        for i in z.infolist():  # unzipping drops exec bits: restore them (ray's gcs_server, raylet)
            mode = (i.external_attr >> 16) & 0o777
            if mode & 0o111:
                os.chmod(os.path.join(site, i.filename), mode)
PY

# dead weight (see the header)
rm -rf "$SITE"/vllm/vllm_flash_attn/_vllm_fa2_C.abi3.so "$SITE"/vllm/_moe_C_stable_libtorch.abi3.so \
       "$SITE"/vllm/vllm-rs "$SITE"/vllm/_flashmla_C.abi3.so "$SITE"/vllm/_flashmla_extension_C.abi3.so \
       "$SITE"/vllm/_qutlass_C.abi3.so "$SITE"/vllm/third_party/deep_gemm "$SITE"/vllm/third_party/fmha_sm100 \
       "$SITE"/xgrammar/lib/libxgrammar.a "$SITE"/ray/jars "$SITE"/ray/dashboard/client/build "$SITE"/ray/cpp/include "$SITE"/ray/tests
find "$SITE" -name __pycache__ -prune -exec rm -rf {} +
(cd "$SITE" && ls -d *.dist-info | sed 's/\.dist-info$//' | sort) > "$OUT/PACKAGES.txt"

(cd "$SITE" && tar --sort=name --mtime=@0 --owner=0 --group=0 -cf - . | xz -T2 -6 > "$OUT/vsite.tar.xz")
(cd "$OUT/parts" && split -b "${PART_MB}M" -d "$OUT/vsite.tar.xz" vsite.tar.xz.part)
rm -f "$OUT/vsite.tar.xz"
(cd "$OUT/parts" && sha256sum vsite.tar.xz.part* > "$OUT/SHA256SUMS")
{
    echo "unpacked: $(du -sm "$SITE" | cut -f1) MiB in $(find "$SITE" -type f | wc -l) files, $(wc -l < "$OUT/PACKAGES.txt") distributions"
    echo "packed (tar.xz, split into ${PART_MB} MiB parts):"
    ls -l "$OUT/parts" | awk 'NR>1 {printf "  %s %d bytes\n", $9, $5}'
    echo "  total $(cat "$OUT"/parts/* | wc -c) bytes"
} > "$OUT/SIZES.txt"
rm -rf "$SITE"
cat "$OUT/SIZES.txt"

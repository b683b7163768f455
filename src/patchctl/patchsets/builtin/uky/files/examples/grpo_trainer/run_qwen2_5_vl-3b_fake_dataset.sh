#!/usr/bin/env bash
# Uky: GRPO training of Qwen2.5-VL-3B-Instruct on the fake vision-language dataset.
#
# Standard configuration: 20 epochs, batch of 4 prompts, long prompts (10240 tokens)
# for the image tokens, vLLM rollout with CUDA graphs, FSDP actor.
#
# Before the first run on a cluster:
#     cp git_ignore.py.example git_ignore.py    # then edit the paths in it
#     python3 test_components.py                # 10 s environment check
#     bash examples/grpo_trainer/run_qwen2_5_vl-3b_fake_dataset_DEBUG.sh   # 2-5 min
#
# Usage:
#     bash examples/grpo_trainer/run_qwen2_5_vl-3b_fake_dataset.sh [hydra overrides...]
# Overrides given on the command line are appended last and win, e.g.
#     ... trainer.n_gpus_per_node=2 ray_kwargs.ray_init.num_cpus=16
#
# Optional shell variables (not exported): N_GPUS_PER_NODE (default 1),
# SKIP_PATH_CHECKS=1 to skip the model/data existence checks.

set -euo pipefail

# ---------------------------------------------------------------------------
# Locate the verl tree (two levels above this script) and load the cluster paths.
# ---------------------------------------------------------------------------
SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$SCRIPT_DIR/../.." && pwd)"

if [[ ! -f "$ROOT/git_ignore.py" ]]; then
    echo "ERROR: $ROOT/git_ignore.py not found; run 'cp git_ignore.py.example git_ignore.py' in $ROOT and edit its paths for this cluster." >&2
    exit 1
fi
if ! python3 "$ROOT/git_ignore.py" --shell >/dev/null; then
    echo "ERROR: '$ROOT/git_ignore.py --shell' failed; compare the file with git_ignore.py.example." >&2
    exit 1
fi
eval "$(python3 "$ROOT/git_ignore.py" --shell)"
for name in VERL_ROOT DATA_DIR MODEL_PATH CHECKPOINT_DIR LOG_DIR; do
    if [[ -z "${!name:-}" ]]; then
        echo "ERROR: git_ignore.py does not set $name; start again from git_ignore.py.example." >&2
        exit 1
    fi
done

if [[ "$(cd "$VERL_ROOT" 2>/dev/null && pwd -P || true)" != "$(cd "$ROOT" && pwd -P)" ]]; then
    echo "WARNING: VERL_ROOT in git_ignore.py ($VERL_ROOT) is not this tree ($ROOT); running from $ROOT." >&2
fi

# ---------------------------------------------------------------------------
# Environment (every line tagged so `grep -n "# Uky"` lists them).
# ---------------------------------------------------------------------------
# Ray: start few workers up front and give slow nodes time to register.
export RAY_num_prestart_python_workers=1  # Uky
export RAY_worker_register_timeout_seconds=600  # Uky

# Thread limits: many Ray/vLLM processes each spawning a full thread pool can
# exhaust the per-user thread limit (pthread_create failures).
export OMP_NUM_THREADS=1  # Uky
export OPENBLAS_NUM_THREADS=1  # Uky
export MKL_NUM_THREADS=1  # Uky

# Triton / vLLM attention (fixes for containers such as vast.ai).
export TRITON_CACHE_DIR=/tmp/triton_cache  # Uky
export VLLM_USE_TRITON_FLASH_ATTN=0  # Uky - Disable Triton flash attention
# export VLLM_ATTENTION_BACKEND=TORCH_SDPA  # Uky - TORCH_SDPA not implemented in vLLM 0.12.0
export VLLM_ATTENTION_BACKEND=FLASH_ATTN  # Uky - Use CUDA FlashAttention (not Triton version)
export VLLM_WORKER_USE_RAY=1  # Uky - Force Ray worker mode
# LD_LIBRARY_PATH may be unset; give it a value so `set -u` accepts the next line.
: "${LD_LIBRARY_PATH:=}"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64/stubs:$LD_LIBRARY_PATH  # Uky
# Drop the empty entry the line above leaves when LD_LIBRARY_PATH was empty.
LD_LIBRARY_PATH="${LD_LIBRARY_PATH%:}"

# Make this tree's verl the one that the driver and the Ray workers import.
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"  # Uky

mkdir -p "$TRITON_CACHE_DIR"

# ---------------------------------------------------------------------------
# Run settings.
# ---------------------------------------------------------------------------
EXPERIMENT_NAME=qwen2_5_vl_3b_fake_dataset
N_GPUS_PER_NODE="${N_GPUS_PER_NODE:-1}"
TRAIN_FILE="$DATA_DIR/train.parquet"
VAL_FILE="$DATA_DIR/test.parquet"

if [[ "${SKIP_PATH_CHECKS:-0}" != 1 ]]; then
    for path in "$TRAIN_FILE" "$VAL_FILE"; do
        if [[ ! -f "$path" ]]; then
            echo "ERROR: data file $path not found; check DATA_DIR in git_ignore.py (SKIP_PATH_CHECKS=1 skips this check)." >&2
            exit 1
        fi
    done
    if [[ ! -d "$MODEL_PATH" ]]; then
        echo "ERROR: model directory $MODEL_PATH not found; check MODEL_PATH in git_ignore.py (SKIP_PATH_CHECKS=1 skips this check)." >&2
        exit 1
    fi
fi

mkdir -p "$LOG_DIR" "$CHECKPOINT_DIR"
LOG_FILE="$LOG_DIR/${EXPERIMENT_NAME}_$(date +%Y%m%d_%H%M%S).log"
echo "verl tree : $ROOT"
echo "model     : $MODEL_PATH"
echo "data      : $TRAIN_FILE"
echo "log file  : $LOG_FILE"

cd "$ROOT"

# Batch sizes: 4 prompts x 4 samples each = 16 sequences per step. The actor takes
# the whole step as one mini-batch (ppo_mini_batch_size counts prompts and must not
# exceed train_batch_size) and processes 2 sequences per GPU at a time.
# max_num_batched_tokens must cover prompt + response (10240 + 512) because
# chunked prefill is on.
python3 -m verl.trainer.main_ppo \
    algorithm.adv_estimator=grpo \
    algorithm.use_kl_in_reward=False \
    data.train_files="$TRAIN_FILE" \
    data.val_files="$VAL_FILE" \
    data.train_batch_size=4 \
    data.max_prompt_length=10240 \
    data.max_response_length=512 \
    data.filter_overlong_prompts=True \
    data.truncation=error \
    data.image_key=images \
    actor_rollout_ref.model.path="$MODEL_PATH" \
    actor_rollout_ref.model.use_remove_padding=True \
    actor_rollout_ref.model.enable_gradient_checkpointing=True \
    actor_rollout_ref.actor.strategy=fsdp \
    actor_rollout_ref.actor.optim.lr=1e-6 \
    actor_rollout_ref.actor.ppo_mini_batch_size=4 \
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2 \
    actor_rollout_ref.actor.use_kl_loss=True \
    actor_rollout_ref.actor.kl_loss_coef=0.01 \
    actor_rollout_ref.actor.kl_loss_type=low_var_kl \
    actor_rollout_ref.actor.entropy_coeff=0 \
    actor_rollout_ref.actor.fsdp_config.param_offload=False \
    actor_rollout_ref.actor.fsdp_config.optimizer_offload=False \
    actor_rollout_ref.rollout.name=vllm \
    actor_rollout_ref.rollout.n=4 \
    actor_rollout_ref.rollout.tensor_model_parallel_size=1 \
    actor_rollout_ref.rollout.gpu_memory_utilization=0.3 \
    actor_rollout_ref.rollout.enforce_eager=False \
    actor_rollout_ref.rollout.max_num_batched_tokens=12288 \
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4 \
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=4 \
    actor_rollout_ref.ref.fsdp_config.param_offload=True \
    trainer.critic_warmup=0 \
    trainer.logger='["console","wandb"]' \
    trainer.project_name=verl_Uky_grpo \
    trainer.experiment_name="$EXPERIMENT_NAME" \
    trainer.default_local_dir="$CHECKPOINT_DIR/$EXPERIMENT_NAME" \
    trainer.n_gpus_per_node="$N_GPUS_PER_NODE" \
    trainer.nnodes=1 \
    trainer.save_freq=20 \
    trainer.test_freq=5 \
    trainer.total_epochs=20 \
    "$@" 2>&1 | tee "$LOG_FILE"

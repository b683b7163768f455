"""Stand-in package (see verl/workers/rollout/vllm_rollout)."""

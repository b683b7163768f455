"""Stand-in of verl 0.9.1's vLLM rollout package: the weight sync, torch-free, for weights-match on CPU."""

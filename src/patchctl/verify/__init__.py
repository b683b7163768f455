"""Proof that a tree carries its patches: structural checks and the tag inventory."""

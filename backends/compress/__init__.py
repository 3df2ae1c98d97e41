"""Basis Sharing: compress a causal LM by sharing whitened SVD bases of same-type weights across layers."""

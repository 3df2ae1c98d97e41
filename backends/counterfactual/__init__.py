"""RCSB: region-constrained counterfactual explanations with a classifier-guided Schrödinger bridge."""

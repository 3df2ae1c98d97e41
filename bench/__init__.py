"""Benchmarks: ``python -m bench.<name> [--quick]`` prints a markdown table, writes bench/results/<name>.json,
and ends with a one-line summary. Peers are measured side by side in the same run; compare ratios."""

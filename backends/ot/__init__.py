"""Optimal transport (issue 40): the truncated Newton method for entropic OT (MDOT-TNT) in torch, DOTmark-style
problems, the same solver in POT's conventions, and the tab's actions (colour transfer, densities, the race)."""

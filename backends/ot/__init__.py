"""Optimal transport (issue 40, not yet a tab): the truncated Newton method for entropic OT (MDOT-TNT), DOTmark-style
problems, and the same solver in POT's conventions. Not yet registered in backends.CAPABILITIES."""

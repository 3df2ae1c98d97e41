"""STRATEGIST's games: GOPS and The Resistance: Avalon, their engines, search agents and improvement loop."""

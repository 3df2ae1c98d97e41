"""Pieces every tab shares: error mapping, long-work streaming with Stop, queue state."""

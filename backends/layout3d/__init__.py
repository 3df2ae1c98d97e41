"""Build-A-Scene: interactive 3D box layouts → depth-conditioned, multi-stage text-to-image."""

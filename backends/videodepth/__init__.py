"""Depth Any Video: temporally consistent depth for whole videos with a video-diffusion prior."""

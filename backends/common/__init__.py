"""Services every capability shares: settings, device, model registry, progress/cancel, io, errors."""

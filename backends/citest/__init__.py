"""CI Test (DCT): conditional-independence testing of latent variables seen only discretized, and PC on top."""

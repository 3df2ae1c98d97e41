"""Generators of assets/published-formats: each builds an author's architecture with their code and config."""

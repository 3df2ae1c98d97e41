"""One script per embedded model; each is reproducible and writes assets/<model>/ with a model card."""

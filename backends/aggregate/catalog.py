"""The problems and their models by name (dependency-free: the requests, the tab and the problems read it)."""

PROBLEMS = ("pathological", "diabetes", "laplace", "burgers")
MODELS = {
    "pathological": ("good (noisy)", "bad −3", "bad +3"),
    "diabetes": ("linear", "tree", "random forest", "SVR", "k-NN", "gradient boosting"),
    "laplace": ("FD fine-left", "FD fine-right", "FD uniform 12", "spectral 16", "GP collocation"),
    "burgers": ("upwind FV 64", "Lax–Wendroff 64", "spectral 32", "kernel operator"),
}
METHODS = ("meva", "meea", "stacking", "average", "inverse_variance", "best_single")
METHOD_LABELS = {"meva": "MEVA (minimal variance)", "meea": "MEEA (minimal error)", "stacking": "stacking (ridge)",
                 "average": "average (voting)", "inverse_variance": "inverse-variance", "best_single": "best single"}

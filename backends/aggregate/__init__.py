"""Aggregation (MEVA): point-wise model aggregation by minimal empirical variance, beside minimal empirical error
and the ensembles practitioners use; scikit-learn estimators, problems (the paper's pathological case, diabetes,
Laplace and Burgers PDEs solved here) and the tab's runs."""

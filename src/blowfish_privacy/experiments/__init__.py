"""Experiments reproducing the papers' figures against the DP baselines."""

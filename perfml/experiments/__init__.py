"""Experiments that reproduce the papers' tables and our own comparisons."""

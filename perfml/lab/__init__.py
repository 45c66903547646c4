"""A lab's shared services: sweep result sets exchanged through an MLflow tracking server.

:mod:`perfml.lab.sweeps` logs a host's result set as an MLflow run tagged with its board
and device fingerprint, and pulls one back for replay and characterization.
"""

from perfml.lab.sweeps import fingerprint_id, log_result_set, pull_result_set

__all__ = ["fingerprint_id", "log_result_set", "pull_result_set"]

"""Conformance suites users can run against their own implementations of perfml's seams.

* :mod:`perfml.testing.backend_conformance`: every :class:`~perfml.measure.Backend`.
* :mod:`perfml.testing.estimator_checks`: every runtime regressor (scikit-learn API).
"""

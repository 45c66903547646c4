"""Every exception perfml defines lives in :mod:`perfml.errors` and derives from PerfmlError.

Issue 9 ("one house"): exceptions defined here and there (two unrelated
``KernelValidationError`` classes, expression errors that were no ``PerfmlError``)
let errors escape the ``except`` clauses meant for them and the CLI's one-line error
handler. This test imports every module of the package and checks every exception
class found in it.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import perfml
import perfml.errors
from perfml.errors import PerfmlError


def _modules():
    for info in pkgutil.walk_packages(perfml.__path__, prefix="perfml."):
        if info.name == "perfml.__main__":  # runs the CLI when imported
            continue
        yield importlib.import_module(info.name)


def _defined_exceptions():
    seen = {}
    for module in _modules():
        for _, obj in inspect.getmembers(module, inspect.isclass):
            # Private classes (``_Escaped`` in perfml.cli) carry control flow inside one
            # module and are never raised to a caller, so they are not perfml errors.
            if (issubclass(obj, BaseException) and obj.__module__.startswith("perfml")
                    and not obj.__name__.startswith("_")):
                seen[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return seen


def test_every_perfml_exception_is_defined_in_errors_and_is_a_perfml_error():
    found = _defined_exceptions()
    assert "perfml.errors.PerfmlError" in found  # the walk did see the package
    elsewhere = sorted(name for name, cls in found.items() if cls.__module__ != "perfml.errors")
    assert elsewhere == [], f"define these in perfml/errors.py: {elsewhere}"
    not_perfml = sorted(name for name, cls in found.items() if not issubclass(cls, PerfmlError))
    assert not_perfml == [], f"derive these from PerfmlError: {not_perfml}"


def test_every_error_class_is_exported():
    classes = {name for name, obj in vars(perfml.errors).items()
               if inspect.isclass(obj) and issubclass(obj, BaseException)}
    assert classes == set(perfml.errors.__all__)


@pytest.mark.parametrize(
    ("old_path", "name"),
    [
        ("perfml.kernels.reference", "KernelValidationError"),
        ("perfml.measure.backend", "KernelValidationError"),
        ("perfml.kernels.catalog", "KernelSidecarError"),
        ("perfml.kernels.catalog", "UnknownKernelError"),
        ("perfml.kernels.compile", "ToolchainMissingError"),
        ("perfml.measure.replay", "ReplayMissError"),
        ("perfml.measure.runner", "SweepFailedPointsError"),
        ("perfml.measure", "ReplayMissError"),
        ("perfml.measure", "SweepFailedPointsError"),
        ("perfml._expr", "ExpressionError"),
    ],
)
def test_old_import_paths_still_work(old_path, name):
    assert getattr(importlib.import_module(old_path), name) is getattr(perfml.errors, name)


def test_one_kernel_validation_error_for_host_and_measurement_layer():
    from perfml.kernels.reference import KernelValidationError as host
    from perfml.measure.backend import KernelValidationError as measure

    assert host is measure


@pytest.mark.parametrize("name", ["UnknownKernelError", "ReplayMissError", "UnknownBoardError"])
def test_key_errors_keep_their_builtin_base_and_a_plain_message(name):
    cls = getattr(perfml.errors, name)
    assert issubclass(cls, KeyError)
    assert str(cls("no such thing; fix it")) == "no such thing; fix it"

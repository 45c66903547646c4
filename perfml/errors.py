"""Typed, actionable errors.

Every error perfml raises on bad input derives from :class:`PerfmlError`. A message
says what was expected, what was found, and how to fix it, on one line, so the CLI
can print it without a traceback and exit with code 2.
"""

from __future__ import annotations

__all__ = [
    "PerfmlError",
    "DataHomeError",
    "DatasetSchemaError",
    "UnknownBoardError",
    "UnknownAppError",
    "MissingBoardParameterError",
    "MissingMetricError",
    "KernelDescriptionError",
    "SweepSpecError",
    "KernelCompileError",
    "DeviceUnavailableError",
    "MixedDeviceError",
    "ResultFileExistsError",
    "ResultSchemaError",
    "ModelFormatError",
    "ExperimentSpecError",
    # --- added by harness ---
    "EstimatorParameterError",
]


class PerfmlError(Exception):
    """Root of every error perfml raises on bad input or a missing resource."""

    #: exit status of the CLI for this error
    exit_code: int = 2


class DataHomeError(PerfmlError):
    """The data home directory is missing or does not hold the expected tables."""


class DatasetSchemaError(PerfmlError, ValueError):
    """A table (or an estimator's X / y) does not have the expected columns, types or units.

    It is also a :class:`ValueError`, which is what scikit-learn's tools expect from an
    estimator given bad input.
    """


class UnknownBoardError(PerfmlError, KeyError):
    """A board name is not in the registry."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class UnknownAppError(PerfmlError, KeyError):
    """An application / kernel id is not described in the repository."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class MissingBoardParameterError(PerfmlError):
    """A model needs a board field that the registry leaves empty (unknown)."""


class MissingMetricError(PerfmlError):
    """A profile table lacks a metric or event that a model needs."""


class KernelDescriptionError(PerfmlError):
    """A kernel description (CuMAPz, work counts) is malformed or references something undefined."""


class SweepSpecError(PerfmlError):
    """A sweep specification (TOML) is malformed."""


class KernelCompileError(PerfmlError):
    """A CUDA kernel failed to compile or disassemble."""


class DeviceUnavailableError(PerfmlError):
    """No CUDA device (or no CuPy) is available for an operation that needs one."""


class MixedDeviceError(PerfmlError):
    """Results from different devices were about to be mixed in one result set."""


class ResultFileExistsError(PerfmlError):
    """Writing would overwrite an existing result file; perfml never does so silently."""


class ResultSchemaError(PerfmlError):
    """A result file has an unknown schema version or unexpected columns."""


class ModelFormatError(PerfmlError):
    """A saved model directory is missing, of an unknown format version, or corrupt."""


class ExperimentSpecError(PerfmlError):
    """An experiment definition (TOML) is malformed."""


# --- added by harness ---
class EstimatorParameterError(PerfmlError, ValueError):
    """An estimator parameter (learner, target, baseline, shrinkage, ...) is invalid; raised in ``fit``.

    It is also a :class:`ValueError`, which is what scikit-learn's tools expect.
    """

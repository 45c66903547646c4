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
    "UnknownTableError",
    "UnknownSourceError",
    "UnknownBoardError",
    "UnknownAppError",
    "MissingBoardParameterError",
    "MissingMetricError",
    "KernelDescriptionError",
    "SweepSpecError",
    "KernelCompileError",
    "DeviceUnavailableError",
    "MixedDeviceError",
    "MixedTimingError",
    "MissingKernelRecordsError",
    "ResultFileExistsError",
    "ResultSchemaError",
    "ModelFormatError",
    "ExperimentSpecError",
    "InvalidValueError",
    "OperatorWorkError",
    "UnsafeOutputError",
    "OutputWriteError",
    "QueryValidationError",
    "KernelSidecarError",
    "ExpressionError",
    "UnknownKernelError",
    "KernelValidationError",
    "KernelOptionError",
    "KernelPathError",
    "SweepTooLargeError",
    "ResultWriteError",
    "UnknownChoiceError",
    "ToolchainMissingError",
    "ReplayMissError",
    "SweepFailedPointsError",
    "CharacterizationBoardError",
    "PhysicalLimitError",
    "CalibrationDataError",
    "FileAccessError",
    "CorruptFileError",
    "ExternalLibraryError",
    "TrackingStoreError",
    "StudyError",
    "NumberRangeError",
    "FileFormatError",
    "WorkLimitError",

    # --- added by harness ---
    "EstimatorParameterError",
    "IntervalLevelError", "ReferenceValidationError", "UnsupportedQueryError",  # added by query

    # --- added by lab ---
    "SharedSweepError", "ExperimentAbortedError", "ClusterUnavailableError",
    "ModelDivergedError",  # added by the third hostile-input pass
    "ProfileImportError",  # added by profile
    "SyntheticSweepError",  # added by tiers
    "KernelFaultError",  # added by the first GPU run
]


class PerfmlError(Exception):
    """Root of every error perfml raises on bad input or a missing resource."""

    #: exit status of the CLI for this error
    exit_code: int = 2


class DataHomeError(PerfmlError):
    """The data home directory is missing or does not hold the expected tables."""


class UnknownTableError(PerfmlError, KeyError):
    """A table name that is none of the data home's tables (a KeyError too, as a dict lookup's)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


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


class MixedTimingError(PerfmlError):
    """Launches timed two ways (CUDA events, kernel durations) were about to be mixed in one result set."""


class MissingKernelRecordsError(PerfmlError):
    """CUPTI returned fewer kernel-duration records than launches were timed."""


class ResultFileExistsError(PerfmlError):
    """Writing would overwrite an existing result file; perfml never does so silently."""


class ResultSchemaError(PerfmlError):
    """A result file has an unknown schema version or unexpected columns."""


class ModelFormatError(PerfmlError):
    """A saved model directory is missing, of an unknown format version, or corrupt."""


class UnknownSourceError(DatasetSchemaError):
    """A ``source`` that no row of runtimes.csv holds (the message lists the sources it holds)."""


class ExperimentSpecError(PerfmlError):
    """An experiment definition (TOML) is malformed."""


class InvalidValueError(PerfmlError, ValueError):
    """A value (an argument, or a field read from a file) is outside what perfml accepts.

    It is also a :class:`ValueError`, so code that validated with ``except ValueError``
    keeps working; the CLI prints it as one line with exit code 2.
    """


class OperatorWorkError(PerfmlError, ValueError):
    """A row of a deep-learning operator table cannot be given a work model.

    The operator is unknown, or a dimension it needs is missing, not a whole number or not
    positive; the message names the row, the column and the fix.
    """


class UnsafeOutputError(PerfmlError):
    """Writing would replace something that is not perfml's: a device, FIFO, socket,
    directory or symlink where a regular file was expected, or a directory that is not a
    perfml model directory."""


class OutputWriteError(PerfmlError):
    """The operating system refused to write an output (disk full, read-only file system,
    permission denied); nothing was left half-written."""


class QueryValidationError(DatasetSchemaError):
    """A prediction query row is outside what the model can answer (CUDA launch limits,
    a non-integer or non-finite size, an app the model never trained on, a column that
    collides with an output column)."""


class KernelSidecarError(PerfmlError):
    """A kernel sidecar (``perfml/kernels/cuda/<family>.toml``) is malformed or inconsistent."""


class ExpressionError(PerfmlError, ValueError):
    """An expression in a data file is malformed, uses something not allowed, or exceeds a limit.

    It is also a :class:`ValueError`, as the evaluators it replaces raised.
    """


class UnknownKernelError(PerfmlError, KeyError):
    """A kernel family or kernel name is not in the catalog."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class KernelValidationError(PerfmlError):
    """A kernel's arguments could not be built, or its output does not match its sidecar's
    validation rule, so it was not timed.

    One class for the host side (``perfml.kernels.reference``) and the measurement layer
    (``perfml.measure``), so that the sweep runner catches both.
    """


class KernelOptionError(KernelSidecarError):
    """A compiler option in a sidecar is not on the allow-list of microbenchmark flags."""


class KernelPathError(KernelSidecarError):
    """A path in a sidecar (``source``) leaves the kernels directory or is not a plain file."""


class SweepTooLargeError(SweepSpecError):
    """A sweep spec expands to more points than the limit allows."""


class ResultWriteError(PerfmlError):
    """Writing a result file failed (disk full, read-only file system, permissions, ...)."""


class UnknownChoiceError(PerfmlError):
    """A command-line value is not one of the values the command knows (kind, arch, ...)."""


class ToolchainMissingError(KernelCompileError):
    """Neither nvcc nor NVRTC (or no nvdisasm) is installed."""


class ReplayMissError(PerfmlError, KeyError):
    """The replayed recording holds no measurement of the requested launch."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class KernelFaultError(PerfmlError):
    """A kernel raised a CUDA error on the GPU (an illegal address, a trap, ...).

    After such an error the CUDA context of the process may be lost (CUDA's "sticky"
    errors), so nothing more is run in it: the sweep runner records the point as faulted
    in the result set (``faults.jsonl``, skipped by ``--resume``) and stops.
    ``launch_key`` names the launch.
    """

    def __init__(self, message: str, launch_key: str | None = None):
        super().__init__(message)
        self.launch_key = launch_key


class SweepFailedPointsError(PerfmlError):
    """Some points failed to compile or validate; the others were recorded."""

    exit_code = 1


class CharacterizationBoardError(InvalidValueError):
    """A characterization of one board was about to be applied to another board, or the
    measurements of one registry board were about to be named (``--board``) as another."""


class PhysicalLimitError(InvalidValueError):
    """A characterized value is outside physical limits (non-positive latency, achieved
    throughput above 1.5 x the specification)."""


class CalibrationDataError(InvalidValueError):
    """Runtime rows cannot calibrate a board: too few rows, no kernel of known work, no
    row of the requested board, or a missing time column."""


class FileAccessError(PerfmlError):
    """The operating system refused a file operation (missing file, directory given as a
    file, permission denied, read-only file system, disk full)."""


class CorruptFileError(PerfmlError):
    """A file could not be decoded: truncated or corrupt compressed data, binary garbage
    where text was expected, an unparsable CSV, TOML, JSON or Arrow file."""


class ExternalLibraryError(PerfmlError):
    """A third-party library (xgboost, Optuna, MLflow, SQLAlchemy) refused its input."""


class TrackingStoreError(PerfmlError):
    """The MLflow tracking store does not exist, does not answer, or holds nothing to report."""


class StudyError(PerfmlError):
    """An Optuna study could not be created, loaded or shared between workers."""


class NumberRangeError(PerfmlError):
    """A number given to perfml is too large (or too small) for the computation it feeds."""


class FileFormatError(PerfmlError):
    """A versioned file is missing, unreadable, malformed, of another format or an unknown version."""


class WorkLimitError(PerfmlError):
    """An input asks for more work than the configured limit (emulated accesses, points, ...);
    the message names the limit and the option that raises it."""


class EstimatorParameterError(PerfmlError, ValueError):
    """An estimator parameter (learner, target, baseline, shrinkage, ...) is invalid; raised in ``fit``.

    It is also a :class:`ValueError`, which is what scikit-learn's tools expect.
    """


# --- added by query ---
class IntervalLevelError(PerfmlError, ValueError):
    """A nominal interval level (``--level``) is not one the model stores."""


class ReferenceValidationError(QueryValidationError):
    """A row of a ``--reference`` file (the user's own measurements) is unusable: unknown
    board, missing or non-positive ``time_ms``, a launch that disagrees with a query's."""


class UnsupportedQueryError(QueryValidationError):
    """A query row names a kernel perfml knows nothing about: no reference measurement, no
    measurement on the training boards and no kernel description."""

# --- added by lab ---
class SharedSweepError(PerfmlError):
    """A sweep result set could not be logged to, or pulled from, an MLflow tracking server
    (no such board, several device fingerprints to choose from, an incomplete run)."""


class ExperimentAbortedError(PerfmlError):
    """An experiment stopped because its MLflow tracking server failed mid-run; its runs are
    marked FAILED (when the server answers again) and the experiment can be run again."""


class ModelDivergedError(PerfmlError):
    """A model's predictions left every physical bound (longer than any kernel time, or an
    overflow): it extrapolates far beyond its training rows, and scoring it would report a
    meaningless figure."""


class ClusterUnavailableError(PerfmlError):
    """The Dask scheduler given with ``--dask`` does not answer, or the ``dask[distributed]``
    package it needs is not installed."""


# --- added by profile ---
class ProfileImportError(QueryValidationError):
    """A ``--profile`` export (Nsight Compute or nvprof CSV) is unusable: not a profiler CSV,
    an unknown unit on a counter perfml uses, no counter perfml uses at all, duplicate
    rows, or profiled kernels that match no ``--reference`` row."""


# --- added by tiers ---
class SyntheticSweepError(InvalidValueError):
    """A sweep result set created as synthetic (made-up timings) was given where only
    measurements may enter (training a model on a board's microbenchmark rows)."""

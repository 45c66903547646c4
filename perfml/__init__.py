"""perfml: predict how long a CUDA kernel runs on a GPU board, including unseen boards.

Importing perfml never imports CuPy, xgboost or MLflow; those are loaded by the
functions that need them.
"""

from perfml.errors import PerfmlError

__version__ = "0.1.0"

__all__ = ["PerfmlError", "__version__"]

"""Run the folds of an experiment on a Dask cluster (``perfml experiment run --dask ADDRESS``).

Choice: joblib's Dask backend around the one fold loop
(:func:`perfml.evaluation.cross_val_predictions` dispatches its folds through
:class:`joblib.Parallel`), not ``dask.distributed`` futures written by hand. The fold
loop stays one function for the local run and the cluster run, so the cluster run
computes exactly what the local run computes (each fold fits a clone of the same
estimator, with the same ``random_state``, on the same rows; joblib returns the folds
in order), and everything outside the folds (data selection, scoring, MLflow logging)
stays in this process. Inside :func:`dask_folds` every ``joblib.Parallel`` without an
explicit ``n_jobs`` uses all the cluster's workers.

The workers need perfml (and the data home, when a model reads it) at the same paths
as this process: start them from the same environment, e.g. ``dask scheduler
--host 127.0.0.1`` and ``dask worker tcp://127.0.0.1:8786`` on each host.
"""

from __future__ import annotations

import contextlib
import re

from perfml.errors import ClusterUnavailableError

__all__ = ["CONNECT_TIMEOUT", "check_address", "dask_folds"]

#: Seconds to wait for the scheduler to answer.
CONNECT_TIMEOUT = 20


def _handshake(address: str, timeout: float) -> None:
    """Connect to ``address`` and read the scheduler's handshake, all within ``timeout`` seconds.

    ``Client(address, timeout=)`` bounds the TCP connection but not the handshake read that
    follows it (distributed 2026.8, ``distributed.comm.core.connect``): a server that
    accepts the connection and never writes (a port of another service) held ``--dask``
    forever. Raises TimeoutError or OSError like the client does.
    """
    import asyncio

    from distributed.comm import connect

    async def probe() -> None:
        comm = await asyncio.wait_for(connect(address, timeout=timeout), timeout)
        await comm.close()

    asyncio.run(probe())


_ADDRESS = re.compile(r"^(?:(?:tcp|tls|inproc|ucx|ws|wss)://)?(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+):(\d{1,5})$")


def check_address(address: str) -> None:
    """A scheduler address as Dask takes it, ``[tcp://]HOST:PORT`` with a port in 1..65535,
    checked before any work (a malformed one failed after a 40 s wait, as an internal error).

    Raises
    ------
    ClusterUnavailableError
        Naming the address and the expected form.
    """
    match = _ADDRESS.match(str(address).strip())
    if match is None or not 1 <= int(match.group(1)) <= 65535:
        raise ClusterUnavailableError(f"--dask {address!r} is not a scheduler address; expected tcp://HOST:PORT, "
                                      "e.g. tcp://127.0.0.1:8786 (what `dask scheduler` prints)")


@contextlib.contextmanager
def dask_folds(address: str, timeout: float = CONNECT_TIMEOUT):
    """Within the block, joblib runs the folds on the Dask cluster at ``address``; yields the client.

    Raises
    ------
    ClusterUnavailableError
        If ``dask[distributed]`` is not installed or the scheduler does not answer
        within ``timeout`` seconds.
    """
    try:
        from dask.distributed import Client
    except ImportError as exc:
        raise ClusterUnavailableError(
            f"--dask needs dask.distributed, which is not installed ({exc}); pip install 'perfml[lab]'") from None
    import joblib

    check_address(address)
    try:
        _handshake(address, timeout)
        client = Client(address, timeout=timeout, set_as_default=False)
    except MemoryError:  # Dask read a reply of another protocol as a frame length (exabytes)
        raise ClusterUnavailableError(
            f"{address} answers, but not as a Dask scheduler; pass the scheduler's address (`dask scheduler` prints it)"
        ) from None
    except (OSError, TimeoutError, ValueError) as exc:
        raise ClusterUnavailableError(
            f"the Dask scheduler {address} does not answer ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}) "
            f"after {timeout:g} s; start it (`dask scheduler --host 127.0.0.1`) or pass another --dask address"
        ) from None
    try:
        with client.as_current(), joblib.parallel_config(backend="dask", n_jobs=-1):
            yield client
    finally:
        client.close()

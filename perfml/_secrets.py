"""Keep passwords of database and server URLs out of everything perfml prints.

A storage URL such as ``postgresql+psycopg://user:PASSWORD@host/db`` may reach perfml on
a command line; the password must not come back in a message, a log line or an error.
:func:`mask_credentials` replaces the password of every ``scheme://user:password@``
in a text by ``***``. The way to keep it off the command line altogether is libpq's
``PGPASSFILE`` (or ``~/.pgpass``) or ``PGPASSWORD`` for PostgreSQL, and
``MLFLOW_TRACKING_USERNAME`` / ``MLFLOW_TRACKING_PASSWORD`` for an MLflow server.
"""

from __future__ import annotations

import re

__all__ = ["mask_credentials"]

# scheme://user:password@  (the password runs to the last '@' before the host part). The
# scheme and user name are bounded (a scheme is a short word): unbounded, every start in a
# long run of letters rescanned the run, and a 400 kB unknown board name in an error message
# took minutes to print.
_USERINFO = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.\-]{0,63}://[^/\s:@]{0,255}):(?P<password>[^\s/]*)@(?=[^\s@/]*(?:[/\s?#]|$))")


# a password given as a query parameter, which libpq and SQLAlchemy also take:
# ...://user@host/db?password=SECRET&sslmode=... (and passwd, pwd, secret, token)
_QUERY_SECRET = re.compile(r"(?P<head>[?&](?:password|passwd|pwd|secret|token|api_key|access_token)=)"
                           r"(?P<value>[^&\s#]*)", re.IGNORECASE)


def mask_credentials(text: str) -> str:
    """``text`` with the password of every ``scheme://user:password@host``, and of every
    ``?password=`` (or ``passwd``, ``pwd``, ``secret``, ``token``) query parameter of a URL,
    replaced by ``***``.

    Examples
    --------
    >>> mask_credentials("could not open postgresql://lab:s3cr@t@127.0.0.1:5432/optuna")
    'could not open postgresql://lab:***@127.0.0.1:5432/optuna'
    >>> mask_credentials("postgresql+psycopg://lab@db:5432/optuna?sslmode=require&password=s3cret")
    'postgresql+psycopg://lab@db:5432/optuna?sslmode=require&password=***'
    """
    text = str(text)
    if "://" not in text:  # nothing to mask; and no regex scan of a long message
        return text
    text = _USERINFO.sub(lambda m: f"{m.group('head')}:***@", text)
    return _QUERY_SECRET.sub(lambda m: f"{m.group('head')}***", text)

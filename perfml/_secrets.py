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

# scheme://user:password@  (the password runs to the first '@' that a host part follows, so an
# '@' inside it is kept in the mask; it may hold '/' and spaces, which SQLAlchemy takes and
# base64-style generated passwords have: 'Ab/Wr0ngB64+Pw=' was printed in full). Every part
# is bounded (a scheme is a short word, a password at most 256 characters on one line):
# unbounded, every start in a long run of letters rescanned the run, and a 400 kB unknown
# board name in an error message took minutes to print.
_USERINFO = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.\-]{0,63}://[^/\s:@]{0,255}):(?P<password>[^\n]{0,256}?)@"
                       r"(?=[^\s@/]*(?:[/\s?#'\")]|$))")


# a password given as a query parameter, which libpq and SQLAlchemy also take:
# ...://user@host/db?password=SECRET&sslmode=... (and sslpassword, passwd, pwd, secret, token)
_QUERY_SECRET = re.compile(r"(?P<head>[?&](?:[a-z_]*password|passwd|pwd|secret|token|api_key|access_token)=)"
                           r"(?P<value>[^&\s#]*)", re.IGNORECASE)

# libpq's keyword form of a connection string: "host=db password=SECRET dbname=x" (or quoted)
_KEYWORD_SECRET = re.compile(r"(?P<head>(?<![?&\w])(?:[a-z_]*password|passwd)\s*=\s*)(?P<value>'(?:[^'\\]|\\.)*'|[^\s'\"]+)",
                             re.IGNORECASE)


def mask_credentials(text: str) -> str:
    """``text`` with the password of every ``scheme://user:password@host``, of every
    ``?password=`` (or ``sslpassword``, ``passwd``, ``pwd``, ``secret``, ``token``) query
    parameter of a URL, and of every libpq keyword ``password=...`` replaced by ``***``.

    Examples
    --------
    >>> mask_credentials("could not open postgresql://lab:s3cr@t@127.0.0.1:5432/optuna")
    'could not open postgresql://lab:***@127.0.0.1:5432/optuna'
    >>> mask_credentials("postgresql+psycopg://lab@db:5432/optuna?sslmode=require&password=s3cret")
    'postgresql+psycopg://lab@db:5432/optuna?sslmode=require&password=***'
    >>> mask_credentials("host=db password='a b' dbname=optuna")
    'host=db password=*** dbname=optuna'
    """
    text = str(text)
    lowered = text.lower()
    if "://" in text:
        text = _USERINFO.sub(lambda m: f"{m.group('head')}:***@", text)
        text = _QUERY_SECRET.sub(lambda m: f"{m.group('head')}***", text)
    if "pass" in lowered:  # no regex scan of a long message that names no password
        text = _KEYWORD_SECRET.sub(lambda m: f"{m.group('head')}***", text)
    return text

"""Passwords of URLs never come back in perfml's messages (issue 13: credentials not in logs)."""

from __future__ import annotations

import string

from hypothesis import given
from hypothesis import strategies as st

from perfml._secrets import mask_credentials

_PASSWORD = st.text(alphabet=string.ascii_letters + string.digits + "!$%&'()*+,;=:@-._~", min_size=1, max_size=40)


@given(password=_PASSWORD, scheme=st.sampled_from(["postgresql", "postgresql+psycopg", "http", "https", "mysql+pymysql"]),
       before=st.sampled_from(["", "could not open ", "error: storage "]), after=st.sampled_from(["", " after 8 attempts", "; fix it"]))
def test_the_password_of_a_url_is_masked(password, scheme, before, after):
    text = f"{before}{scheme}://lab_user:{password}@db.example.org:5432/optuna{after}"
    assert mask_credentials(text) == f"{before}{scheme}://lab_user:***@db.example.org:5432/optuna{after}"


@given(st.sampled_from(["sqlite:////tmp/optuna.db", "postgresql+psycopg://lab@127.0.0.1:5432/optuna",
                        "http://127.0.0.1:5000", "a plain message: 3 trials, best 12.5%"]))
def test_text_without_a_password_is_unchanged(text):
    assert mask_credentials(text) == text


_QUERY_VALUE = st.text(alphabet=string.ascii_letters + string.digits + "!$%'()*+,;:@-._~", min_size=1, max_size=40)


@given(value=_QUERY_VALUE, key=st.sampled_from(["password", "PASSWORD", "passwd", "pwd", "token"]),
       tail=st.sampled_from(["", "&sslmode=require", " does not answer"]))
def test_a_password_given_as_a_query_parameter_is_masked(value, key, tail):
    # libpq and SQLAlchemy take ?password=...; perfml printed it in full in "does not answer"
    text = f"error: postgresql+psycopg://u@127.0.0.1:1/db?connect_timeout=5&{key}={value}{tail}"
    assert mask_credentials(text) == f"error: postgresql+psycopg://u@127.0.0.1:1/db?connect_timeout=5&{key}=***{tail}"


def test_the_cli_masks_a_query_password_of_an_unreachable_store(capsys, monkeypatch):
    from perfml.cli import main

    monkeypatch.setenv("MLFLOW_TRACKING_URI", "postgresql+psycopg://u@127.0.0.1:1/db?password=s3cretQ")
    assert main(["report"]) == 2
    err = capsys.readouterr().err
    assert "s3cretQ" not in err and "password=***" in err


@given(password=st.text(alphabet=string.ascii_letters + string.digits + "/+= !$&()*,;:@-._~", min_size=1, max_size=40)
       .filter(lambda p: p.strip() == p and p.strip()),
       scheme=st.sampled_from(["postgresql+psycopg", "http"]), quote=st.sampled_from(["", "'"]))
def test_a_password_with_a_slash_or_a_space_is_masked(password, scheme, quote):
    """A base64-style password ('Ab/Wr0ngB64+Pw=') or one with a space was printed in full: the mask
    stopped at '/' and at whitespace."""
    text = f"error: {quote}{scheme}://lab_user:{password}@127.0.0.1:55432/optuna{quote} has an invalid port"
    assert mask_credentials(text) == f"error: {quote}{scheme}://lab_user:***@127.0.0.1:55432/optuna{quote} has an invalid port"


def test_ssl_and_libpq_keyword_passwords_are_masked():
    assert mask_credentials("postgresql://u@h/db?sslpassword=TOPSECRET&x=1") == "postgresql://u@h/db?sslpassword=***&x=1"
    assert mask_credentials("host=h password=TOPSECRET dbname=x") == "host=h password=*** dbname=x"
    assert mask_credentials("host=h password='a b' dbname=x") == "host=h password=*** dbname=x"
    assert mask_credentials("the password is required; set PGPASSWORD") == "the password is required; set PGPASSWORD"

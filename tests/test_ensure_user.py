"""`python manage.py ensure_user NAME --password PW` (DESIGN.md Interfaces), through Django's own
argument parser: a password that begins with '-' works as `--password=-x` and on stdin."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth import authenticate, get_user_model
from django.core.management import CommandError, call_command

pytestmark = pytest.mark.django_db


def test_password_as_documented() -> None:
    out = io.StringIO()
    call_command("ensure_user", "ida", "--password", "Weidenkorb-17", stdout=out)
    assert "angelegt" in out.getvalue()
    assert authenticate(username="ida", password="Weidenkorb-17") is not None


@pytest.mark.parametrize("password", ["-5wafQx9_kT2", "--lang-genug", "-1234abcd"])
def test_a_password_beginning_with_a_dash(password: str) -> None:
    call_command("ensure_user", "ida", f"--password={password}", stdout=io.StringIO())
    assert authenticate(username="ida", password=password) is not None


def test_password_from_stdin_updates_an_existing_login() -> None:
    call_command("ensure_user", "ida", "--password", "alt-genug", stdout=io.StringIO())
    out = io.StringIO()
    call_command(
        "ensure_user",
        "ida",
        "--password-stdin",
        "--superuser",
        stdin=io.StringIO("-5waf mit Leerzeichen \n"),
        stdout=out,
    )
    assert "aktualisiert" in out.getvalue()
    assert authenticate(username="ida", password="alt-genug") is None
    user = authenticate(username="ida", password="-5waf mit Leerzeichen ")
    assert user is not None and user.is_superuser and user.is_staff
    assert get_user_model().objects.filter(username="ida").count() == 1


def test_no_password_source_is_refused() -> None:
    with pytest.raises(CommandError):
        call_command("ensure_user", "ida")
    with pytest.raises(CommandError, match="zu kurz"):
        call_command("ensure_user", "ida", "--password-stdin", stdin=io.StringIO(""))
    with pytest.raises(CommandError, match="zu kurz"):
        call_command("ensure_user", "ida", "--password=-")
    assert not get_user_model().objects.filter(username="ida").exists()

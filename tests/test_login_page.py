"""The login page: styled like the app, keeps the username after a failed try, and says where
the demo password comes from while `make run`'s demo login exists."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def test_a_failed_login_keeps_the_username_and_says_why() -> None:
    UserFactory(username="ylva-login")
    answer = Client(REMOTE_ADDR="10.0.9.1").post(
        "/login/", {"username": "ylva-login", "password": "falsch"}
    )
    assert answer.status_code == 200
    html = answer.content.decode()
    assert 'value="ylva-login"' in html
    assert "Benutzername oder Passwort stimmen nicht." in html and 'role="alert"' in html
    # The cursor goes to the password, the field that needs typing again.
    password = html.split('id="id_password"', 1)[1].split(">", 1)[0]
    assert "autofocus" in password and 'aria-invalid="true"' in password


def test_the_first_visit_has_an_empty_labelled_form_in_the_apps_style() -> None:
    html = Client().get("/login/").content.decode()
    assert html.count("<h1") == 1 and "login.css" in html
    assert '<label for="id_username">Benutzername</label>' in html
    assert '<label for="id_password">Passwort</label>' in html
    assert 'value=""' in html.split('id="id_username"', 1)[1].split(">", 1)[0]


def test_the_demo_password_source_is_named_while_the_demo_login_exists() -> None:
    assert "NOVABERG_DEMO_PASSWORD" not in Client().get("/login/").content.decode()
    UserFactory(username="demo")
    html = Client().get("/login/").content.decode()
    assert "NOVABERG_DEMO_PASSWORD" in html and "make run" in html
    assert "demo_password" in html

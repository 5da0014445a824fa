"""The chat pages: a GET never creates anything; logging in opens the conversation."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from conversation.models import Session

pytestmark = pytest.mark.django_db


def test_the_chat_page_of_a_person_without_a_conversation_creates_none(user: Any) -> None:
    browser = Client()
    browser.force_login(user)
    page = browser.get("/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "Noch kein Gespräch mit Nova." in html and "Gespräch beginnen" in html
    assert not Session.objects.filter(user=user).exists()
    # Starting one is a POST.
    started = browser.post("/chat/new/")
    session = Session.objects.get(user=user)
    assert started.status_code == 302 and started["Location"] == f"/chat/{session.pk}/"


def test_the_chat_page_leads_to_the_latest_conversation(user: Any, session: Session) -> None:
    browser = Client()
    browser.force_login(user)
    assert browser.get("/")["Location"] == f"/chat/{session.pk}/"
    assert Session.objects.filter(user=user).count() == 1


def test_logging_in_opens_a_first_conversation_once(user: Any) -> None:
    user.set_password("geheim123")
    user.save(update_fields=["password"])
    browser = Client()
    for _ in range(2):
        answer = browser.post("/login/", {"username": user.username, "password": "geheim123"})
        assert answer.status_code == 302
    assert Session.objects.filter(user=user).count() == 1
    page = browser.get("/", follow=True)
    assert page.redirect_chain[-1][0] == f"/chat/{Session.objects.get(user=user).pk}/"


def test_a_wrong_password_opens_nothing(user: Any) -> None:
    answer = Client().post("/login/", {"username": user.username, "password": "falsch"})
    assert answer.status_code == 200
    assert not Session.objects.filter(user=user).exists()


def test_the_chat_page_refuses_a_post(user: Any) -> None:
    browser = Client()
    browser.force_login(user)
    assert browser.post("/").status_code == 405
    assert not Session.objects.filter(user=user).exists()

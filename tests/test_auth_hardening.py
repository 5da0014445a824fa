"""Secrets and exposure: failed logins are limited (page and token API, per address and per
name, in German), passwords pass Django's four validators, the schema needs a login.

Each test uses its own addresses and names, so the counters (in the run's Redis) of one test
never reach another; the limits are lowered per test through the ``settings`` fixture."""

from __future__ import annotations

import io
import time
from types import SimpleNamespace
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.contrib.auth import get_user_model, password_validation
from django.core.management import CommandError, call_command
from django.test import Client
from rest_framework.test import APIClient

from conversation.models import Session
from novaberg import launcher, login_throttle
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

PASSWORD = "Weidenkorb-17"
TOO_MANY = "Zu viele Anmeldeversuche. Bitte in"


@pytest.fixture
def low_limits(settings: Any) -> None:
    rates = {"anmeldung_name": "3/hour", "anmeldung_adresse": "5/hour"}
    settings.REST_FRAMEWORK = {**django_settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": rates}


def _person(name: str) -> Any:
    return UserFactory.create(username=name, password=PASSWORD)


def _token(name: str, password: str, address: str, **extra: Any) -> Any:
    return APIClient().post(
        "/api/auth/token/",
        {"username": name, "password": password},
        format="json",
        REMOTE_ADDR=address,
        **extra,
    )


def test_the_token_api_refuses_a_name_after_three_failures_even_with_the_right_password(
    low_limits: None,
) -> None:
    _person("tilda")
    for _ in range(3):
        assert _token("tilda", "falsch", "10.0.1.1").status_code == 400

    refused = _token("tilda", PASSWORD, "10.0.1.2")  # another address: the name counts

    assert refused.status_code == 429
    assert refused.json()["detail"].startswith(TOO_MANY)
    assert refused.json()["detail"].endswith("Minuten erneut versuchen.")
    # The hour runs from the first failure, whatever the clock says.
    assert 3600 - 120 <= int(refused["Retry-After"]) <= 3600
    # Another name from the same addresses is not locked out.
    _person("ulla")
    assert _token("ulla", PASSWORD, "10.0.1.1").status_code == 200


def test_failures_just_before_the_full_hour_still_lock_the_name_for_an_hour(
    low_limits: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The window starts at the first failure: three guesses at 15:59:55 are not forgiven at
    16:00 (a window of the clock's hour would let three more through right away)."""
    _person("trude")
    top_of_next_hour = (int(time.time()) // 3600 + 1) * 3600
    clock = [top_of_next_hour - 5.0]
    monkeypatch.setattr(login_throttle, "time", SimpleNamespace(time=lambda: clock[0]))
    for _ in range(3):
        assert _token("trude", "falsch", "10.0.1.5").status_code == 400

    clock[0] = top_of_next_hour + 10.0
    refused = _token("trude", PASSWORD, "10.0.1.6")
    assert refused.status_code == 429
    assert refused.json()["detail"] == f"{TOO_MANY} 60 Minuten erneut versuchen."

    clock[0] = top_of_next_hour - 5.0 + 3600 + 1  # the hour since the first failure is over
    assert _token("trude", PASSWORD, "10.0.1.6").status_code == 200


def test_the_token_api_refuses_an_address_that_tries_many_names(low_limits: None) -> None:
    _person("vera")
    for n in range(5):
        assert _token(f"niemand{n}", "falsch", "10.0.2.1").status_code == 400

    assert _token("vera", PASSWORD, "10.0.2.1").status_code == 429
    assert _token("vera", PASSWORD, "10.0.2.2").status_code == 200


def test_a_forged_forwarded_for_header_does_not_buy_fresh_addresses(low_limits: None) -> None:
    _person("wanda")
    for n in range(5):
        forged = {"HTTP_X_FORWARDED_FOR": f"203.0.113.{n}"}
        assert _token(f"jemand{n}", "falsch", "10.0.3.1", **forged).status_code == 400

    answer = _token("wanda", PASSWORD, "10.0.3.1", HTTP_X_FORWARDED_FOR="198.51.100.9")
    assert answer.status_code == 429


def test_successful_logins_are_never_limited(low_limits: None) -> None:
    _person("xenia")
    for _ in range(8):
        assert _token("xenia", PASSWORD, "10.0.4.1").status_code == 200


def test_a_success_forgives_the_names_earlier_failures(low_limits: None) -> None:
    _person("yvonne")
    for _ in range(2):
        _token("yvonne", "falsch", "10.0.5.1")
    assert _token("yvonne", PASSWORD, "10.0.5.1").status_code == 200
    for _ in range(2):
        assert _token("yvonne", "falsch", "10.0.5.2").status_code == 400
    assert _token("yvonne", PASSWORD, "10.0.5.3").status_code == 200


def test_the_login_page_is_limited_too_and_says_so_in_german(low_limits: None) -> None:
    person = _person("zora")
    browser = Client(REMOTE_ADDR="10.0.6.1")
    for _ in range(3):
        wrong = browser.post("/login/", {"username": "zora", "password": "falsch"})
        assert wrong.status_code == 200

    refused = browser.post("/login/", {"username": "zora", "password": PASSWORD})

    assert refused.status_code == 429
    page = refused.content.decode()
    assert TOO_MANY in page
    assert "Benutzername oder Passwort stimmen nicht" not in page
    assert "_auth_user_id" not in browser.session
    assert not Session.objects.filter(user=person).exists()


def test_page_and_api_count_together(low_limits: None) -> None:
    _person("amalia")
    Client(REMOTE_ADDR="10.0.7.1").post("/login/", {"username": "amalia", "password": "x"})
    for _ in range(2):
        _token("amalia", "falsch", "10.0.7.2")
    assert _token("amalia", PASSWORD, "10.0.7.3").status_code == 429


def test_the_counters_live_in_a_cache_every_process_shares() -> None:
    # A per-process cache (locmem, dummy) would give each daphne worker its own counters.
    backend = django_settings.CACHES["default"]["BACKEND"]
    assert backend in {
        "django.core.cache.backends.redis.RedisCache",
        "django.core.cache.backends.db.DatabaseCache",
    }


@pytest.mark.parametrize(
    ("rate", "parsed"),
    [
        pytest.param("10/hour", (10, 3600), id="hour"),
        pytest.param("5/15min", (5, 900), id="15min"),
        pytest.param("3/s", (3, 1), id="second"),
    ],
)
def test_rates_are_read_like_drf_rates(rate: str, parsed: tuple[int, int]) -> None:
    assert login_throttle.parse_rate("x", rate) == parsed


@pytest.mark.parametrize("rate", ["zehn/hour", "10/jahr", "0/hour", ""])
def test_a_bad_rate_fails_loudly(rate: str) -> None:
    from django.core.exceptions import ImproperlyConfigured

    with pytest.raises(ImproperlyConfigured):
        login_throttle.parse_rate("x", rate)


def test_the_schema_declares_the_429_of_the_token_api(api: APIClient) -> None:
    schema = api.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    responses = schema["paths"]["/api/auth/token/"]["post"]["responses"]
    assert {"200", "400", "429"} <= set(responses)


# --- passwords -----------------------------------------------------------------------------------


def test_all_four_standard_validators_are_on() -> None:
    names = {v["NAME"].rsplit(".", 1)[-1] for v in django_settings.AUTH_PASSWORD_VALIDATORS}
    assert names == {
        "UserAttributeSimilarityValidator",
        "MinimumLengthValidator",
        "CommonPasswordValidator",
        "NumericPasswordValidator",
    }


@pytest.mark.parametrize(
    ("password", "reason"),
    [
        pytest.param("kurz1", "zu kurz", id="short"),
        pytest.param("geheim123", "zu üblich", id="common"),
        pytest.param("8264019375", "komplett numerisch", id="numeric"),
        pytest.param("hildegard1", "ähnlich", id="like-the-name"),
    ],
)
def test_ensure_user_refuses_a_weak_password_and_says_why(password: str, reason: str) -> None:
    with pytest.raises(CommandError, match=reason) as refused:
        call_command("ensure_user", "hildegard", f"--password={password}", stdout=io.StringIO())
    assert str(refused.value).startswith("Das Passwort wird nicht angenommen:")
    assert not get_user_model().objects.filter(username="hildegard").exists()


def test_ensure_user_keeps_the_old_password_when_the_new_one_is_refused() -> None:
    call_command("ensure_user", "ida", "--password", PASSWORD, stdout=io.StringIO())
    with pytest.raises(CommandError):
        call_command("ensure_user", "ida", "--password", "12345678", stdout=io.StringIO())
    user = get_user_model().objects.get(username="ida")
    assert user.check_password(PASSWORD)


def test_the_launchers_demo_passwords_pass_the_validators() -> None:
    demo = get_user_model()(username=launcher.DEMO_USER)
    for _ in range(200):
        password_validation.validate_password(launcher.new_demo_password(), user=demo)


# --- the schema ----------------------------------------------------------------------------------


def test_the_schema_needs_a_login(api: APIClient) -> None:
    assert APIClient().get("/api/schema/").status_code == 401
    assert api.get("/api/schema/", HTTP_ACCEPT="application/json").status_code == 200


def test_the_admin_login_form_is_no_way_around_the_limit(low_limits: None) -> None:
    staff = UserFactory.create(username="olga", password=PASSWORD, is_staff=True)
    browser = Client(REMOTE_ADDR="10.0.7.1")

    # Django's own admin form would check the password without counting failures.
    posted = browser.post("/admin/login/", {"username": "olga", "password": PASSWORD})
    assert posted.status_code == 302 and posted["Location"].startswith("/login/?next=")
    assert "_auth_user_id" not in browser.session

    for _ in range(3):
        browser.post("/admin/login/?next=/admin/", {"username": "olga", "password": "falsch"})
        browser.post("/login/", {"username": "olga", "password": "falsch"})
    assert browser.post("/login/", {"username": "olga", "password": PASSWORD}).status_code == 429

    fresh = Client(REMOTE_ADDR="10.0.7.2")
    asked = fresh.get("/admin/")
    assert asked.status_code == 302
    via = fresh.get(asked["Location"])  # /admin/login/?next=/admin/ sends to the one login page
    assert via.status_code == 302 and via["Location"] == "/login/?next=%2Fadmin%2F"
    assert not staff.check_password("falsch")


def test_the_admin_login_keeps_only_a_local_next() -> None:
    answer = Client().get("/admin/login/?next=https://evil.example/")
    assert answer["Location"] == "/login/?next=%2Fadmin%2F"

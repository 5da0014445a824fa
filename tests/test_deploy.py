"""`manage.py check --deploy` is clean with the production variables the README names, and the
embedding dimension setting is checked against the schema."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent


def _check(extra: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.update(extra)
    return subprocess.run(
        [sys.executable, "manage.py", "check", *args],
        cwd=BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_check_deploy_is_clean_with_production_variables() -> None:
    result = _check(
        {
            "DJANGO_SECRET_KEY": "x7" * 30 + "-production-secret-key-for-the-check",
            "DJANGO_ALLOWED_HOSTS": "nova.example.org",
            "NOVABERG_HTTPS": "true",
            "DJANGO_CSRF_TRUSTED_ORIGINS": "https://nova.example.org",
            "DJANGO_DEBUG": "false",
        },
        "--deploy",
        "--fail-level",
        "WARNING",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_debug_is_off_unless_asked() -> None:
    code = "from django.conf import settings; print(settings.DEBUG)"
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_DEBUG"}
    env["DJANGO_SETTINGS_MODULE"] = "novaberg.settings"
    result = subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {code}"],
        cwd=BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.stdout.strip() == "False", result.stderr


def test_a_bad_setting_is_one_clear_line() -> None:
    result = _check({"NOVABERG_EMBEDDINGS": "magic"})
    assert result.returncode != 0
    assert (
        "NOVABERG_EMBEDDINGS must be 'local', 'local-torch', 'local-onnx' or 'openai'"
        in result.stderr
    )
    assert "Traceback" not in result.stderr


def test_embedding_dimension_must_match_the_schema() -> None:
    result = _check({"NOVABERG_EMBEDDING_DIM": "768"})
    assert result.returncode != 0
    assert "novaberg.E001" in result.stderr


def _env_example() -> dict[str, str]:
    values = {}
    for line in (BASE_DIR / "deploy" / "env.example").read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            name, _, value = line.partition("=")
            values[name.strip()] = value.strip()
    return values


def test_the_compose_deployment_names_only_what_env_example_defines() -> None:
    """deploy/docker-compose.yml cannot be run here (no container engine); what can be checked
    is that it parses, runs one beat beside web and worker services, and that every variable
    it needs is in env.example."""
    import re

    import yaml

    text = (BASE_DIR / "deploy" / "docker-compose.yml").read_text()
    compose = yaml.safe_load(text)
    services = compose["services"]
    assert {"db", "redis", "migrate", "web", "worker", "beat", "proxy"} <= set(services)
    assert services["db"]["image"].startswith("pgvector/pgvector:")
    assert services["redis"]["image"].startswith("redis:")
    assert "beat" in services["beat"]["command"] and "deploy" not in services["beat"]
    assert "novaberg.asgi:application" in services["web"]["command"]
    used = set(re.findall(r"\$\{([A-Z_]+)", text)) | set(re.findall(r"\$\$([A-Z_]+)", text))
    defaults = set(re.findall(r"\$\{([A-Z_]+):-", text))
    missing = used - set(_env_example()) - defaults
    assert not missing, f"not in deploy/env.example: {sorted(missing)}"
    nginx = (BASE_DIR / "deploy" / "nginx.conf").read_text()
    assert "proxy_set_header Upgrade $http_upgrade" in nginx and "proxy_buffering off" in nginx


def test_check_deploy_is_clean_with_env_example_once_tls_is_on() -> None:
    env = _env_example()
    env.update(DJANGO_SECRET_KEY="k9" * 30 + "-a-real-secret", NOVABERG_HTTPS="true")
    for name in ("DATABASE_URL", "REDIS_URL"):
        env.pop(name, None)  # the compose file builds these from the passwords
    result = _check(env, "--deploy", "--fail-level", "WARNING")
    assert result.returncode == 0, result.stdout + result.stderr

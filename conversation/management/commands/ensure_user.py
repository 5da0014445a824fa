"""``python manage.py ensure_user NAME --password PW`` (DESIGN.md Interfaces): create or update a
login. ``--password-stdin`` reads the password from the first line of stdin instead, so that it
never stands on a command line (``ps``) and is never taken for an option (a password beginning
with '-'; on the command line write ``--password=-x``)."""

from __future__ import annotations

import sys
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model, password_validation
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction
from django.utils import translation


class Command(BaseCommand):
    help = "Create or update a login (DESIGN.md Interfaces)."
    # call_command(..., stdin=io.StringIO(...)) in tests, as Django's createsuperuser does.
    stealth_options = ("stdin",)

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument(
            "--password", help="the password (one beginning with '-': --password=-x)"
        )
        source.add_argument(
            "--password-stdin",
            action="store_true",
            help="read the password from the first line of stdin (not visible in ps)",
        )
        parser.add_argument("--superuser", action="store_true", help="also grant admin access")

    def handle(self, *args: Any, **options: Any) -> None:
        name: str = options["name"].strip()
        if options["password_stdin"]:
            stream = options.get("stdin") or sys.stdin
            # Only the line break is taken off: spaces are part of a password.
            password = stream.readline().rstrip("\r\n")
        else:
            password = options["password"]
        if not name:
            raise CommandError("Der Name ist leer.")
        created = self._store(name, password, superuser=bool(options["superuser"]))
        verb = "angelegt" if created else "aktualisiert"
        self.stdout.write(f"Login {name!r} {verb}.")

    @transaction.atomic
    def _store(self, name: str, password: str, *, superuser: bool) -> bool:
        user_model = get_user_model()
        user, created = user_model.objects.get_or_create(username=name)
        # Django's validators (settings.AUTH_PASSWORD_VALIDATORS), with their German reasons;
        # a refused password rolls the new login back.
        try:
            with translation.override(settings.LANGUAGE_CODE):
                password_validation.validate_password(password, user=user)
        except ValidationError as exc:
            reasons = " ".join(str(message) for message in exc.messages)
            raise CommandError(f"Das Passwort wird nicht angenommen: {reasons}") from None
        user.set_password(password)
        if superuser:
            user.is_staff = True
            user.is_superuser = True
        user.save()
        # Read back: a login that cannot log in is not created.
        stored = user_model.objects.get(pk=user.pk)
        if not stored.check_password(password):
            raise CommandError(f"Login {name!r} konnte nicht gespeichert werden.")
        return created

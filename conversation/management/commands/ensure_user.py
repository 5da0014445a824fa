from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction


class Command(BaseCommand):
    help = "Create or update a login (DESIGN.md Interfaces)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")
        parser.add_argument("--password", required=True)
        parser.add_argument("--superuser", action="store_true", help="also grant admin access")

    @transaction.atomic
    def handle(self, *args: Any, **options: Any) -> None:
        name: str = options["name"].strip()
        password: str = options["password"]
        if not name:
            raise CommandError("Der Name ist leer.")
        if len(password) < 4:
            raise CommandError("Das Passwort braucht mindestens 4 Zeichen.")
        user_model = get_user_model()
        user, created = user_model.objects.get_or_create(username=name)
        user.set_password(password)
        if options["superuser"]:
            user.is_staff = True
            user.is_superuser = True
        user.save()
        # Read back: a login that cannot log in is not created.
        stored = user_model.objects.get(pk=user.pk)
        if not stored.check_password(password):
            raise CommandError(f"Login {name!r} konnte nicht gespeichert werden.")
        verb = "angelegt" if created else "aktualisiert"
        self.stdout.write(f"Login {name!r} {verb}.")

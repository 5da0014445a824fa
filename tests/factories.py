from __future__ import annotations

import factory
from django.contrib.auth.models import User

from conversation.models import Character, Session


class UserFactory(factory.django.DjangoModelFactory[User]):
    class Meta:
        model = User
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"person{n}")
    password = factory.django.Password("geheim123")


class SessionFactory(factory.django.DjangoModelFactory[Session]):
    class Meta:
        model = Session

    user = factory.SubFactory(UserFactory)
    character = factory.LazyFunction(lambda: Character.objects.get(name="Nova"))

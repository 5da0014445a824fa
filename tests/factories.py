from __future__ import annotations

import factory
from django.contrib.auth import get_user_model

from conversation.models import Character, Session


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"person{n}")
    password = factory.django.Password("geheim123")


class SessionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Session

    user = factory.SubFactory(UserFactory)
    character = factory.LazyFunction(lambda: Character.objects.get(name="Nova"))

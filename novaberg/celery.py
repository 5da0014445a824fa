from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "novaberg.settings")

app = Celery("novaberg")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
# novaberg is a project package, not an installed app: name it so its tasks register too.
app.autodiscover_tasks(["novaberg"])

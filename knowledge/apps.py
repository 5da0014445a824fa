from django.apps import AppConfig

BEAT_ENTRY = "knowledge-rueckweg"


class KnowledgeConfig(AppConfig):
    name = "knowledge"
    verbose_name = "Wissen"

    def ready(self) -> None:
        from django.conf import settings

        from knowledge import conf
        from knowledge.rueckweg.planner import PURPOSE, offline_handler
        from novaberg.llm import register_offline

        register_offline(PURPOSE, offline_handler)
        # The return path's periodic run belongs to this app; Celery reads the schedule dict
        # from settings, so the entry is added to that same dict here.
        settings.CELERY_BEAT_SCHEDULE.setdefault(
            BEAT_ENTRY,
            {"task": "knowledge.tasks.rueckweg_pending", "schedule": conf.rueckweg_every_s()},
        )

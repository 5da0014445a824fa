from django.apps import AppConfig

BEAT_ENTRY = "knowledge-rueckweg"
ZONE_SCAN_BEAT_ENTRY = "knowledge-zone-scan"


class KnowledgeConfig(AppConfig):
    name = "knowledge"
    verbose_name = "Wissen"

    def ready(self) -> None:
        from django.conf import settings

        from conversation import agents, memory
        from conversation.pipeline import claims
        from knowledge import conf, context
        from knowledge.agent import knowledge_agent
        from knowledge.learn import DISTIL_PURPOSE, distil_offline_handler
        from knowledge.rueckweg.planner import PURPOSE, offline_handler
        from knowledge.tasks import enqueue_promoted
        from novaberg.llm import register_offline

        register_offline(PURPOSE, offline_handler)
        register_offline(DISTIL_PURPOSE, distil_offline_handler)
        # [EIGENES WISSEN] for the composer, on the turn vector (seed 002 §3.0).
        context.register()
        # Her own library is named in the order ("in deinem Wissen", "merk dir …"): narrower
        # than the files agents ("Vergiss den Ordner X") and the directives ("lösch", "merk").
        agents.register_agent(knowledge_agent, priority=5)
        # issue 27: a reply that says a knowledge file was written must have this turn's write
        # behind it (the knowledge agent deletes a paragraph and learns a file by chat).
        claims.register_action_kind(
            claims.ActionKind(
                name="knowledge",
                agent=knowledge_agent.name,
                nouns=frozenset({"datei", "wissen", "notiz", "absatz", "eintrag"}),
                steps=frozenset({"geloescht", "gelernt"}),
            )
        )
        # seed 004 v0.14: the promotion is the proof; it enqueues the return path on commit.
        memory.on_promoted("knowledge", enqueue_promoted)
        # The return path's periodic run and the zone scan belong to this app; Celery reads the
        # schedule dict from settings, so the entries are added to that same dict here.
        settings.CELERY_BEAT_SCHEDULE.setdefault(
            BEAT_ENTRY,
            {"task": "knowledge.tasks.rueckweg_pending", "schedule": conf.rueckweg_every_s()},
        )
        settings.CELERY_BEAT_SCHEDULE.setdefault(
            ZONE_SCAN_BEAT_ENTRY,
            {"task": "knowledge.tasks.zone_scan_all", "schedule": conf.zone_scan_every_s()},
        )

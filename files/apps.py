from django.apps import AppConfig


class FilesConfig(AppConfig):
    name = "files"

    def ready(self) -> None:
        from conversation import agents
        from conversation.pipeline import claims
        from files import context
        from files.agent import FilesAgent
        from files.agent_read import files_read_agent
        from files.watcher.enrich import PURPOSE, offline_handler
        from novaberg.llm import register_offline

        register_offline(PURPOSE, offline_handler)
        # A files order names a folder ("Vergiss den Ordner X"); the directives agent also
        # reads "vergiss", so the narrower files patterns are asked first.
        agents.register_agent(FilesAgent(), priority=10)
        agents.register_agent(files_read_agent, priority=150)
        context.register()
        # issue 27: a reply that says a folder was released, suspended or forgotten must have
        # this turn's write behind it.
        claims.register_action_kind(
            claims.ActionKind(
                name="files",
                agent=FilesAgent.name,
                nouns=frozenset({"ordner", "verzeichnis", "freigabe", "indexzeile"}),
                verbs=frozenset({"freigeben", "stilllegen", "aufnehmen", "beenden"}),
                steps=frozenset({"freigegeben", "stillgelegt", "wieder_aufgenommen", "vergessen"}),
            )
        )

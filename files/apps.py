from django.apps import AppConfig


class FilesConfig(AppConfig):
    name = "files"

    def ready(self) -> None:
        from conversation import agents
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

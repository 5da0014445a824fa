from importlib import import_module

from django.apps import AppConfig


class FilesConfig(AppConfig):
    name = "files"

    def ready(self) -> None:
        from conversation import agents
        from files.agent import FilesAgent
        from files.watcher.enrich import PURPOSE, offline_handler
        from novaberg.llm import register_offline

        register_offline(PURPOSE, offline_handler)
        # A files order names a folder ("Vergiss den Ordner X"); the directives agent also
        # reads "vergiss", so the narrower files patterns are asked first.
        agents.register_agent(FilesAgent(), priority=10)
        agents.register_agent(import_module("files.agent_read").files_read_agent, priority=150)

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
        agents.register_agent(FilesAgent())
        agents.register_agent(import_module("files.agent_read").files_read_agent)
        # The router asks agents in registry order. A files order names a folder ("Vergiss
        # den Ordner X"); the directives agent also reads "vergiss", so the narrower pattern
        # is asked first. (The registry is a dict; move the other agents behind this one.)
        registry = agents._REGISTRY
        for name in [n for n in registry if n != "files"]:
            registry[name] = registry.pop(name)

from django.apps import AppConfig


class ConversationConfig(AppConfig):
    name = "conversation"
    verbose_name = "Gespräch"

    def ready(self) -> None:
        # Offline handlers of the pipeline nodes (DESIGN.md: the offline backend is a real
        # implementation of the same gateway interface).
        from conversation.pipeline import offline  # noqa: F401
        from novaberg import checks  # noqa: F401  (registers the system checks)

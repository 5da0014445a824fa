from django.apps import AppConfig


class DirectivesConfig(AppConfig):
    name = "directives"
    verbose_name = "Direktiven"

    def ready(self) -> None:
        from conversation.agents import register_agent
        from conversation.pipeline.claims import ActionKind, register_action_kind
        from directives import context, tribunal
        from directives.agent.agent import DirectivesAgent
        from directives.agent.classify import PURPOSE
        from directives.agent.offline import classify_offline
        from novaberg.llm import register_offline

        register_agent(DirectivesAgent())
        register_offline(PURPOSE, classify_offline)
        register_offline(tribunal.PURPOSE, tribunal.review_offline)
        context.register()
        # issue 27: a reply that says a rule was written must have this turn's write behind it.
        register_action_kind(
            ActionKind(
                name="directives",
                agent=DirectivesAgent.name,
                nouns=frozenset({"regel", "direktive", "anweisung", "verbot"}),
                steps=frozenset({"ausgefuehrt", "schon_ausgefuehrt"}),
            )
        )

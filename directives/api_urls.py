from __future__ import annotations

from django.urls import URLPattern, URLResolver, path

from directives import api

urlpatterns: list[URLPattern | URLResolver] = [
    path("directives/", api.DirectiveListApi.as_view(), name="directive-list"),
    path("directives/<int:directive_id>/", api.DirectiveDetailApi.as_view(), name="directive"),
    path(
        "directives/<int:directive_id>/history/",
        api.DirectiveHistoryApi.as_view(),
        name="directive-history",
    ),
    # The rules page: the chat's confirmation question and gate (directives/proposals.py).
    path("directives/proposals/", api.ProposalCreateApi.as_view(), name="directive-proposals"),
    path(
        "directives/proposals/<int:pending_id>/answer/",
        api.ProposalAnswerApi.as_view(),
        name="directive-proposal-answer",
    ),
]

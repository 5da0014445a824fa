from __future__ import annotations

from django.urls import URLPattern, URLResolver, path

from files import api, api_read

urlpatterns: list[URLPattern | URLResolver] = [
    path("roots/", api.RootListCreateApi.as_view(), name="api-roots"),
    path("roots/<int:root_id>/", api.RootDetailApi.as_view(), name="api-root"),
    path("roots/<int:root_id>/confirm/", api.RootConfirmApi.as_view(), name="api-root-confirm"),
    path("roots/<int:root_id>/index/", api.RootIndexApi.as_view(), name="api-root-index"),
    path("roots/<int:root_id>/suspend/", api.RootSuspendApi.as_view(), name="api-root-suspend"),
    path(
        "roots/<int:root_id>/reactivate/",
        api.RootReactivateApi.as_view(),
        name="api-root-reactivate",
    ),
    path("roots/<int:root_id>/forget/", api.RootForgetApi.as_view(), name="api-root-forget"),
    # Read-only: hybrid search and the line viewer.
    path("search/", api_read.SearchApi.as_view(), name="api-files-search"),
    path("roots/<int:root_id>/file/", api_read.FileLinesApi.as_view(), name="api-root-file"),
]

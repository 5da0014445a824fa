from __future__ import annotations

from django.urls import URLPattern, URLResolver, path

from files import api

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
]

# --- Files II (issue 5): read-only search and line viewer (appended) ---
from django.urls import path as _path  # noqa: E402

from files import api_read  # noqa: E402

urlpatterns += [
    _path("search/", api_read.SearchApi.as_view(), name="api-files-search"),
    _path("roots/<int:root_id>/file/", api_read.FileLinesApi.as_view(), name="api-root-file"),
]

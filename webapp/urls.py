from django.contrib.auth import views as auth_views
from django.urls import include, path

from webapp import views
from webapp.api.api import api
from webapp.core import docs

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    path("favicon.ico", views.favicon, name="favicon"),
    path("docs/", docs.docs, name="docs"),
    path("docs/<path:path>", docs.docs, name="docs_page"),
    path("demo/miniature/", views.demo_miniature, name="demo_miniature"),
    path("demo/miniature/figure.svg", views.demo_miniature_figure, name="demo_miniature_figure"),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("task-sets/", include("webapp.tasks.urls")),
    path("task-sets/", include("webapp.tasks.imports.urls")),
    path("models/", include("webapp.models_registry.urls")),
    path("runs/", include("webapp.runs.urls")),
    path("workers/", include("webapp.runs.workers_urls")),
    path("dialogues/export/", include("webapp.transcripts.export_urls")),
    path("dialogues/", include("webapp.transcripts.urls")),
    path("annotations/", include("webapp.labelling.urls")),
    path("training/", include("webapp.training.urls")),
    path("experiments/", include("webapp.experiments.urls")),
    path("forks/", include("webapp.forks.urls")),
    path("playground/", include("webapp.people.playground_urls")),
    path("people/", include("webapp.accounts.urls")),
    path("people/", include("webapp.people.urls")),
    path("api/v1/", api.urls),
    path("account/tokens/", include("webapp.api.urls")),
]

from django.urls import path

from webapp.runs import workers_views

urlpatterns = [
    path("", workers_views.workers, name="workers"),
    path("state/", workers_views.workers_state, name="workers_state"),
]

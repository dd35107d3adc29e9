from django.urls import path

from webapp.runs import views

urlpatterns = [
    path("", views.run_list, name="run_list"),
    path("new/", views.run_create, name="run_create"),
    path("tag/", views.runs_tag, name="runs_tag"),
    path("protocols/", views.protocol_list, name="protocol_list"),
    path("protocols/<int:pk>/edit/", views.protocol_edit, name="protocol_edit"),
    path("protocols/<int:pk>/clone/", views.protocol_clone, name="protocol_clone"),
    path("protocols/<int:pk>/retire/", views.protocol_retire, name="protocol_retire"),
    path("<int:pk>/", views.run_detail, name="run_detail"),
    path("<int:pk>/live/", views.run_live, name="run_live"),
    path("<int:pk>/wait/", views.run_wait_note, name="run_wait"),
    path("<int:pk>/metrics.csv", views.run_metrics_csv, name="run_metrics_csv"),
    path("<int:pk>/cancel/", views.run_cancel, name="run_cancel"),
    path("<int:pk>/label/", views.run_relabel, name="run_relabel"),
]

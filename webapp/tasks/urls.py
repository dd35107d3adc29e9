from django.urls import path

from webapp.tasks import views

urlpatterns = [
    path("", views.task_set_list, name="task_set_list"),
    path("new/", views.task_set_create, name="task_set_create"),
    path("generate/", views.task_set_generate, name="task_set_generate"),
    path("markdown-preview/", views.markdown_preview, name="markdown_preview"),
    path("probes/<int:probe_id>/", views.probe_detail, name="probe_detail"),
    path("<int:pk>/", views.task_set_detail, name="task_set_detail"),
    path("<int:pk>/edit/", views.task_set_edit, name="task_set_edit"),
    path("<int:pk>/duplicate/", views.task_set_duplicate, name="task_set_duplicate"),
    path("<int:pk>/delete/", views.task_set_delete, name="task_set_delete"),
    path("<int:pk>/export.jsonl", views.task_set_export, name="task_set_export"),
    path("<int:pk>/tasks/new/", views.task_create, name="task_create"),
    path("<int:pk>/tasks/<int:task_id>/", views.task_edit, name="task_edit"),
    path("<int:pk>/tasks/<int:task_id>/delete/", views.task_delete, name="task_delete"),
    path("<int:pk>/tasks/<int:task_id>/try/", views.probe_create, name="probe_create"),
]

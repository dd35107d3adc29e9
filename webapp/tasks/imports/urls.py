"""Mounted at task-sets/ (next to webapp.tasks.urls): imports."""

from django.urls import path

from webapp.tasks.imports import views

urlpatterns = [
    path("imports/new/", views.task_import_start, name="task_import_start"),
    path("imports/<int:pk>/", views.task_import_detail, name="task_import_detail"),
    path("imports/<int:pk>/map/", views.task_import_map, name="task_import_map"),
    path("imports/<int:pk>/live/", views.task_import_live, name="task_import_live"),
]

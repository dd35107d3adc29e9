from django.urls import path

from webapp.people import playground_views as views

urlpatterns = [
    path("tasks/<int:task_id>/", views.playground_new, name="playground_new"),
    path("runs/<int:run_id>/", views.playground_wait, name="playground_wait"),
]

from django.urls import path

from webapp.tasks import views

urlpatterns = [
    path("", views.task_set_list, name="task_set_list"),
    path("new/", views.task_set_create, name="task_set_create"),
    path("<int:pk>/", views.task_set_detail, name="task_set_detail"),
]

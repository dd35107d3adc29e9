from django.urls import path

from webapp.training import views

urlpatterns = [
    path("new/", views.training_create, name="training_create"),
    path("online/new/", views.training_online_create, name="training_online_create"),
    path("previews/", views.training_preview_create, name="training_preview_create"),
    path("previews/<int:pk>/", views.training_preview_detail, name="training_preview_detail"),
    path("runs/<int:pk>/", views.training_run_detail, name="training_run_detail"),
    path("runs/<int:pk>/live/", views.training_run_live, name="training_run_live"),
]

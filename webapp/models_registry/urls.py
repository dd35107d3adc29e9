from django.urls import path

from webapp.models_registry import views

urlpatterns = [
    path("", views.model_list, name="model_list"),
    path("<int:pk>/edit/", views.model_edit, name="model_edit"),
    path("<int:pk>/clone/", views.model_clone, name="model_clone"),
    path("<int:pk>/retire/", views.model_retire, name="model_retire"),
]

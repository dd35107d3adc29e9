from django.urls import path

from webapp.models_registry import views

urlpatterns = [path("", views.model_list, name="model_list")]

from django.urls import path

from webapp.dialogues import views

urlpatterns = [
    path("", views.dialogue_list, name="dialogue_list"),
    path("compare/", views.dialogue_compare, name="dialogue_compare"),
    path("<int:pk>/", views.dialogue_detail, name="dialogue_detail"),
]

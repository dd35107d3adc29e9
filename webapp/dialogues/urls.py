from django.urls import path

from webapp.dialogues import views

urlpatterns = [
    path("", views.dialogue_list, name="dialogue_list"),
    path("<int:pk>/", views.dialogue_detail, name="dialogue_detail"),
]

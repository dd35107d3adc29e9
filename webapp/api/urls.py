from django.urls import path

from webapp.api import views

urlpatterns = [
    path("", views.token_list, name="api_tokens"),
    path("<int:pk>/revoke/", views.token_revoke, name="api_token_revoke"),
]

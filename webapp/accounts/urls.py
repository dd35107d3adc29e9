from django.urls import path

from webapp.accounts import views

urlpatterns = [path("", views.people, name="people")]

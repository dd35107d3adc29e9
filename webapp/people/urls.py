from __future__ import annotations

from django.urls import path

from webapp.people import views

urlpatterns = [
    path("inbox/", views.inbox, name="people_inbox"),
    path("turns/<int:pk>/", views.turn, name="people_turn"),
    path("turns/<int:pk>/draft/", views.turn_draft, name="people_turn_draft"),
    path("turns/<int:pk>/next/", views.turn_next, name="people_turn_next"),
    path("turns/<int:pk>/reassign/", views.turn_reassign, name="people_turn_reassign"),
    path("turns/<int:pk>/end/", views.turn_end, name="people_turn_end"),
]

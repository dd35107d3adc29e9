from django.urls import path

from webapp.transcripts import views

urlpatterns = [
    path("", views.dialogue_list, name="dialogue_list"),
    path("compare/", views.dialogue_compare, name="dialogue_compare"),
    # Nested under the list: the list's rows link to "<pk>/" relatively (reverse costs 45 us a
    # link; templates/jinja2/transcripts/transcript_results.html).
    path("<int:pk>/", views.dialogue_detail, name="dialogue_detail"),
]

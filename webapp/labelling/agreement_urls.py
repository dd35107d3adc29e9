"""Agreement pages; mounted at ``annotations/agreement/``."""

from django.urls import path

from webapp.labelling import agreement_views as views

urlpatterns = [
    path("", views.agreement_index, name="agreement_index"),
    path("<int:schema_id>/", views.agreement_schema, name="agreement_schema"),
    path(
        "<int:schema_id>/questions/<int:question_id>/disagreements/",
        views.agreement_disagreements,
        name="agreement_disagreements",
    ),
]

from django.urls import include, path

from webapp.labelling import views

urlpatterns = [
    path("", views.queue_list, name="queue_list"),
    path("schemas/", views.schema_list, name="schema_list"),
    path("schemas/<int:pk>/", views.schema_detail, name="schema_detail"),
    path("questions/<int:pk>/", views.question_edit, name="question_edit"),
    path("questions/<int:pk>/move/", views.question_move, name="question_move"),
    path("questions/<int:pk>/delete/", views.question_delete, name="question_delete"),
    path("queues/new/", views.queue_create, name="queue_create"),
    path("queues/<int:pk>/", views.queue_detail, name="queue_detail"),
    path("queues/<int:pk>/next/", views.queue_next, name="queue_next"),
    path(
        "queues/<int:pk>/dialogues/<int:dialogue_pk>/",
        views.item_history,
        name="item_history",
    ),
    path("items/<int:pk>/", views.item_label, name="item_label"),
    path("items/<int:pk>/answer/", views.item_answer, name="item_answer"),
    path("items/<int:pk>/submit/", views.item_submit, name="item_submit"),
    path("items/<int:pk>/skip/", views.item_skip, name="item_skip"),
    path("agreement/", include("webapp.labelling.agreement_urls")),
    # The People page lives with the accounts app; mounted here, as webapp/urls.py mounts
    # only /annotations/ for this work.
]

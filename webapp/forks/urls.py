from django.urls import path

from webapp.forks import views

urlpatterns = [
    path("dialogues/<int:pk>/", views.fork_panel, name="fork_panel"),
    path("compare/", views.branch_compare, name="fork_compare"),
    path("counterfactual/", views.counterfactual_create, name="fork_counterfactual_create"),
    path("runs/<int:run_id>/", views.fork_run_comparison, name="fork_run_comparison"),
]

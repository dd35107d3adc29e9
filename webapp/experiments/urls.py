from django.urls import path

from webapp.experiments import views

urlpatterns = [
    path("", views.experiment_index, name="experiment_index"),
    path("lost-in-conversation/new/", views.lic_create, name="lic_create"),
    path("lost-in-conversation/<int:pk>/", views.lic_detail, name="lic_detail"),
    path("lost-in-conversation/<int:pk>/live/", views.lic_live, name="lic_live"),
    path("compare/", views.run_compare, name="run_compare"),
    path("transfer/", views.transfer_matrix, name="transfer_matrix"),
]

from django.apps import AppConfig


class PeopleConfig(AppConfig):
    name = "webapp.people"
    label = "people"

from django.apps import AppConfig


class ModelsRegistryConfig(AppConfig):
    name = "webapp.models_registry"
    label = "models_registry"

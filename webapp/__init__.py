"""Dialab's Django project. Never imports torch, transformers, vllm or models_gpu."""

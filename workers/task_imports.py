"""Celery tasks that import task sets (default queue)."""

from __future__ import annotations

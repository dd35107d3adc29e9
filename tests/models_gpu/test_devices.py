"""models_gpu.devices: training's CPU thread count (half the cores, or as configured)."""

from __future__ import annotations

import pytest

from models_gpu.devices import TRAINING_THREADS_ENV, training_threads, usable_cores


def test_training_takes_half_the_cores_unless_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TRAINING_THREADS_ENV, raising=False)
    assert training_threads() == max(1, usable_cores() // 2)
    monkeypatch.setenv(TRAINING_THREADS_ENV, "3")
    assert training_threads() == 3


@pytest.mark.parametrize("value", ["0", "two", "-1"])
def test_a_bad_thread_count_is_refused_by_name(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(TRAINING_THREADS_ENV, value)
    with pytest.raises(ValueError, match=f"{TRAINING_THREADS_ENV} must be a whole number"):
        training_threads()

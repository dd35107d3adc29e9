"""The heartbeat thread long jobs share (webapp.core.heartbeat)."""

from __future__ import annotations

import threading
import time

from webapp.core.heartbeat import Heartbeat


def test_a_heartbeat_beats_when_woken_survives_a_failed_beat_and_stops_at_exit() -> None:
    beaten = threading.Semaphore(0)
    beats: list[int] = []

    def beat() -> None:
        beats.append(len(beats))
        beaten.release()
        if len(beats) == 1:
            raise RuntimeError("a database hiccup")

    with Heartbeat(beat, interval_seconds=60, name="heartbeat-test") as heartbeat:
        heartbeat.wake()  # long before the interval is up
        assert beaten.acquire(timeout=5)
        heartbeat.wake()  # the failed beat did not stop the thread
        assert beaten.acquire(timeout=5)
    count = len(beats)
    time.sleep(0.1)
    assert len(beats) == count == 2, "nothing after exit"


def test_a_heartbeat_beats_every_interval() -> None:
    beaten = threading.Semaphore(0)
    with Heartbeat(beaten.release, interval_seconds=0.05, name="heartbeat-test"):
        for _ in range(3):
            assert beaten.acquire(timeout=5)

"""Run untrusted Python (model-written code) against unit tests behind an OS-level boundary.

``runner.py`` is the parent side, ``harness.py`` what runs in the two sandboxed processes,
``isolation.py`` how the sandboxes are made (bubblewrap), ``seccomp.py`` their system-call filter.
"""

from __future__ import annotations

from models_gpu.sandbox.isolation import SandboxUnavailable, configured_mode, current_isolation
from models_gpu.sandbox.runner import SandboxLimits, SandboxReport, TestOutcome, run_tests

__all__ = [
    "SandboxLimits",
    "SandboxReport",
    "SandboxUnavailable",
    "TestOutcome",
    "configured_mode",
    "current_isolation",
    "run_tests",
]

"""Run untrusted Python (model-written code) against unit tests in a bounded child process.

See ``runner.py`` for the parent side and ``harness.py`` for what the child does and refuses.
"""

from __future__ import annotations

from models_gpu.sandbox.runner import (
    SandboxLimits,
    SandboxReport,
    TestOutcome,
    network_isolated,
    run_tests,
)

__all__ = ["SandboxLimits", "SandboxReport", "TestOutcome", "network_isolated", "run_tests"]

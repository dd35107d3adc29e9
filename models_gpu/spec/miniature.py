"""The miniature reproduction's recipe: what ``manage.py sml_miniature`` trains and evaluates,
and what the demo project's "miniature" button launches as an online training run. The tasks and
the conditions are ``models_gpu.training.miniature``'s. Standard library only: the web process
imports it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from models_gpu.spec.online import OnlineConfig
from models_gpu.spec.training import TrainingConfig

# Where ``sml_miniature`` keeps its latest report (under the data directory), which the demo's
# home page shows: the tables and headline figures as JSON, and the figure as SVG.
LATEST_REPORT = "latest.json"
LATEST_FIGURE = "latest.svg"


def latest_results_dir(data_dir: Path) -> Path:
    return data_dir / "miniature"


MINIATURE_ONLINE = OnlineConfig(
    group_size=8, tasks_per_step=8, horizon=4, gamma=0.7, temperature=1.0, max_new_tokens=12,
    store_share=0.25, eval_every=0,
)  # fmt: skip  # store_share: what is kept to read (the demo's run), not what is trained


@dataclass(frozen=True)
class MiniatureSettings:
    """What one seed runs (the defaults are what ``sml_miniature`` reports)."""

    steps: int = 120
    heldout_tasks: int = 32
    heldout_samples: int = 8
    outside_tasks: int = 32
    eval_turns: int = 8
    learning_rate: float = 3e-4
    sft_learning_rate: float = 1e-4
    online: OnlineConfig = field(default_factory=lambda: MINIATURE_ONLINE)
    eval_params: tuple[tuple[str, Any], ...] = (("temperature", 0.7), ("max_new_tokens", 12))

    def training(self, seed: int, device: str = "cpu") -> TrainingConfig:
        """The GRPO stage's optimizer settings: full fine-tuning at a constant learning rate,
        one checkpoint at the end."""
        return TrainingConfig(
            learning_rate=self.learning_rate, max_steps=self.steps, seed=seed, device=device,
            precision="float32", gradient_checkpointing=False, logging_steps=10,
            save_steps=self.steps, keep_checkpoints=1, max_length=512, lr_scheduler="constant",
        )  # fmt: skip

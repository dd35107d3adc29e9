"""Can the house model's architecture hold guess the number's strategy when it is shown it?

    .venv/bin/python benchmarks/guessing_capacity.py
    .venv/bin/python benchmarks/guessing_capacity.py --seed 1 --steps 1500
    .venv/bin/python benchmarks/guessing_capacity.py --layers 4 --players narrowing

Builds two models with the miniature's games-only recipe (``house.build.GAME_TRAINING``), same
seed, same steps: one pre-trained on games of a guesser with no strategy (the miniature's base),
one on games of a guesser who draws each guess from what "too high" / "too low" left
(``CorpusMix.guess_narrowing``). Both are then played as ``house.evaluate.evaluate_guessing``
plays them (64 games, temperature 1, up to 8 guesses). If the second's later guesses are
consistent with the feedback far above chance, the model can represent the strategy and a
training method that fails to find it is short of signal, not of capacity; if not, the model is
too small for the game. Prints both builds' figures, then the headline ones, one ``name: value``
a line. Nothing is downloaded; CPU only; each build takes about as long as the miniature's base
(about 4 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from models_gpu.devices import TRAINING_THREADS_ENV, usable_cores
from models_gpu.house.build import GAME_TRAINING, HOUSE_MODEL, build_house_model
from models_gpu.house.corpus import CorpusMix
from models_gpu.house.model import HouseConfig

PLAYERS = {
    "no_strategy": GAME_TRAINING.mix,
    "narrowing": replace(GAME_TRAINING.mix, guess_narrowing=True),
}


def build_and_play(
    out: Path, mix: CorpusMix, seed: int, steps: int, model: HouseConfig
) -> dict[str, object]:
    config = replace(GAME_TRAINING, mix=mix)
    build_house_model(
        out, seed=seed, steps=steps, train_config=config, model_config=model, evaluate_tasks=0
    )
    from models_gpu.house.evaluate import evaluate_guessing

    return evaluate_guessing(out, seed=seed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=GAME_TRAINING.steps)
    parser.add_argument(
        "--players", nargs="+", choices=list(PLAYERS), default=list(PLAYERS),
        help="Which builds (default: both).",
    )  # fmt: skip
    parser.add_argument("--layers", type=int, default=HOUSE_MODEL.num_layers)
    parser.add_argument("--hidden", type=int, default=HOUSE_MODEL.hidden_size)
    parser.add_argument("--work-dir", default=None, help="Where the builds go (a temp dir).")
    args = parser.parse_args()
    # This script is the machine's only work: train on every core unless told otherwise.
    os.environ.setdefault(TRAINING_THREADS_ENV, str(usable_cores()))
    work = Path(args.work_dir or tempfile.mkdtemp(prefix="guessing-capacity-"))

    model = replace(
        HOUSE_MODEL,
        num_layers=args.layers,
        hidden_size=args.hidden,
        intermediate_size=4 * args.hidden,
        num_heads=max(1, args.hidden // 64),
    )
    print(f"model: {model}", flush=True)
    figures = {}
    for player in args.players:
        mix = PLAYERS[player]
        figures[player] = build_and_play(work / player, mix, args.seed, args.steps, model)
        print(f"{player}: {json.dumps(figures[player])}", flush=True)
    for player, played in figures.items():
        print(f"{player}_valid_moves: {played['guessing_valid_moves']}")
        print(f"{player}_consistent_moves: {played['guessing_consistent_moves']}")
        print(f"{player}_consistent_by_chance: {played['guessing_consistent_by_chance']}")
        print(f"{player}_after_last_turn: {played['guessing_accuracy_by_turn'][-1]}")


if __name__ == "__main__":
    main()

"""Benchmark the dialogue engine against its backend: engine throughput vs one raw batched call,
and vs running the same dialogues one at a time.

    .venv/bin/python benchmarks/engine.py --model /tmp/house-full
    .venv/bin/python benchmarks/engine.py --model DIR --backends vllm --dialogues 256 --max-turns 5

For each backend, on the same loaded model, after one warm-up call:
  raw            ONE ``generate`` call on the first-turn prompts of all the dialogues, exactly
                 the requests the engine's first round sends (checked); the median of
                 ``--raw-repeats`` such calls;
  engine         ``models_gpu.engine.run_dialogues`` over the same dialogues (didactic protocol,
                 the scripted feedback teacher, the numeric verifier), every finished dialogue
                 persisted as it finishes;
  one-at-a-time  the same engine with batch_size=1 over the first ``--one-at-a-time`` dialogues.
  played back    the same engine again, its student answering each call at no cost with what
                 the model answered in that call of the engine's run (the engine's flow depends
                 only on the replies): the engine's own time (verification, the teacher,
                 persistence) alone, measured rather than inferred as the difference between
                 the engine's wall time and its generate calls; the median of ``--raw-repeats``;
  replayed       the engine's last round and its first round's requests of the same dialogues
                 (so the same batch size), sent again after the engine ran, each the median of
                 ``--raw-repeats`` calls: both prompts are then as cached as they can be, so
                 what still separates the two calls is the length of the context each new token
                 attends to, not prefill.
Throughput is the students' generated tokens (completion tokens as the backend counts them; the
teacher is scripted) per second of wall time; for the engine paths the wall time includes
verification, the teacher, and persistence. Every raw call and engine path starts with the
backend's prefix cache emptied (``forget_prefixes``); within the engine, each round reuses what
the dialogue's earlier rounds computed, and the per-round table says how many prompt tokens that
was.

Persistence: each finished dialogue becomes the worker's own row
(``models_gpu.results.dialogue_row``: the dialogue and its turns, NUL characters made storable)
and goes to a JSONL file, written and flushed as each batch finishes. No database is opened
(models_gpu imports no Django), so the bulk inserts the worker does on top are not measured.

vLLM starts worker processes with spawn: everything that builds a generator runs under
``if __name__ == "__main__":``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")  # the table, not the engine's log
from models_gpu.backends import load_generator
from models_gpu.engine import run_dialogues
from models_gpu.generators.arithmetic import arithmetic_tasks
from models_gpu.results import dialogue_row
from models_gpu.spec.protocol import ProtocolSpec
from models_gpu.spec.run import RoleSpec
from models_gpu.spec.templates import render_template, resolve_templates
from models_gpu.types import (
    DialogueJob,
    DialogueResult,
    Generation,
    GenerationRequest,
    Generator,
    Message,
    TaskSpec,
)

# Per-backend params beyond the shared sampling ones. float32 on CPU: what both backends run
# the house model in there (vLLM's "auto" would pick bfloat16 on some CPUs).
BACKEND_PARAMS: dict[str, dict[str, Any]] = {
    "transformers": {},
    "vllm": {"dtype": "float32"},
}


def make_jobs(count: int) -> list[DialogueJob]:
    """Arithmetic dialogues with the numeric verifier, as tests/models_gpu/conftest.py builds."""
    tasks = arithmetic_tasks(count, seed=0)
    return [
        DialogueJob(
            task=TaskSpec(
                task_id=index,
                prompt=task["prompt"],
                reference={"answer": task["answer"]},
                verifier_kind="numeric",
            ),
            sample_index=0,
            seed=index,
        )
        for index, task in enumerate(tasks)
    ]


def first_turn_request(job: DialogueJob, protocol: ProtocolSpec) -> GenerationRequest:
    """The request the engine makes for a student's first reply: the protocol's student system
    prompt, then the task. ``measure_engine`` checks the engine's first round sent exactly these."""
    system = render_template(
        resolve_templates(protocol.templates)["student_system"],
        {"max_turns": protocol.max_turns, "shards_total": ""},
    )
    messages = (Message("system", system),) if system else ()
    return GenerationRequest(messages=(*messages, Message("user", job.task.prompt)), seed=job.seed)


@dataclass
class JsonlStore:
    """``on_finished``: every finished dialogue becomes a JSONL row, flushed per batch."""

    out: IO[str]
    dialogues: int = 0
    student_tokens: int = 0
    seconds: float = 0.0

    def __call__(self, results: list[DialogueResult]) -> None:
        started = time.perf_counter()
        self.out.write("".join(json.dumps(dialogue_row(r).to_json()) + "\n" for r in results))
        self.out.flush()
        self.dialogues += len(results)
        self.student_tokens += sum(
            turn.completion_tokens for r in results for turn in r.turns if turn.role == "student"
        )
        self.seconds += time.perf_counter() - started


@dataclass(frozen=True)
class Call:
    """One ``generate`` call: its batch, how long its prompts were, what it produced."""

    batch: int
    mean_prompt_tokens: float
    mean_cached_tokens: float  # of those, reused from the backend's prefix cache
    tokens: int
    longest: int  # the longest reply: a batched call decodes until it ends
    seconds: float


@dataclass
class TimedGenerator:
    """Forwards to a generator and records each ``generate`` call."""

    inner: Generator
    calls: list[Call] = field(default_factory=list)
    requests: list[list[GenerationRequest]] = field(default_factory=list)  # each call's
    generations: list[list[Generation]] = field(default_factory=list)  # each call's

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        self.requests.append(list(requests))
        started = time.perf_counter()
        generations = self.inner.generate(requests)
        seconds = time.perf_counter() - started
        self.generations.append(generations)
        self.calls.append(
            Call(
                batch=len(requests),
                mean_prompt_tokens=sum(g.prompt_tokens for g in generations) / len(generations),
                mean_cached_tokens=(
                    sum(g.cached_prompt_tokens for g in generations) / len(generations)
                ),
                tokens=sum(g.completion_tokens for g in generations),
                longest=max(g.completion_tokens for g in generations),
                seconds=seconds,
            )
        )
        return generations

    @property
    def seconds(self) -> float:
        return sum(call.seconds for call in self.calls)


@dataclass(frozen=True)
class Measurement:
    backend: str
    path: str
    dialogues: int
    generate_calls: int
    student_generations: int
    tokens: int
    seconds: float
    generate_seconds: float
    persist_seconds: float = 0.0
    calls: tuple[Call, ...] = ()
    requests: tuple[list[GenerationRequest], ...] = ()  # each call's (the engine's rounds)
    generations: tuple[list[Generation], ...] = ()  # each call's

    @property
    def tokens_per_second(self) -> float:
        return self.tokens / self.seconds


def measure_raw(
    backend: str,
    generator: Generator,
    jobs: Sequence[DialogueJob],
    protocol: ProtocolSpec,
    *,
    repeats: int,
) -> Measurement:
    """One batched call of every first-turn request; the median of ``repeats`` such calls (on a
    shared machine a single call can land on a busy moment)."""
    requests = [first_turn_request(job, protocol) for job in jobs]
    timed = TimedGenerator(generator)
    for _ in range(repeats):
        forget_prefixes(generator)
        timed.generate(requests)
    call = _median_call(timed.calls)
    return Measurement(
        backend, "raw (1 call)", len(jobs), 1, len(requests), call.tokens, call.seconds,
        call.seconds, calls=(call,),
    )  # fmt: skip


def measure_engine(
    backend: str,
    path: str,
    generator: Generator,
    jobs: Sequence[DialogueJob],
    protocol: ProtocolSpec,
    *,
    batch_size: int,
    out_path: Path,
) -> Measurement:
    teacher = load_generator(RoleSpec("scripted", "feedback-teacher"))
    forget_prefixes(generator)
    student = TimedGenerator(generator)
    with out_path.open("w", encoding="utf-8") as out:
        store = JsonlStore(out)
        started = time.perf_counter()
        stats = run_dialogues(
            jobs,
            protocol,
            student=student,
            teacher=teacher,
            on_finished=store,
            batch_size=batch_size,
        )
        seconds = time.perf_counter() - started
    assert store.dialogues == len(jobs) == stats.dialogues_finished, (store.dialogues, len(jobs))
    # The raw call must be the engine's first round, request for request.
    assert student.requests[0] == [first_turn_request(job, protocol) for job in jobs[:batch_size]]
    return Measurement(
        backend, path, len(jobs), len(student.calls), stats.student_generations,
        store.student_tokens, seconds, student.seconds, store.seconds, tuple(student.calls),
        tuple(student.requests), tuple(student.generations),
    )  # fmt: skip


@dataclass
class PlayedBack:
    """A student that answers each call, at once, with the replies of the same call in an
    earlier engine run over the same jobs."""

    replies: Sequence[list[Generation]]
    played: int = 0

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        generations = self.replies[self.played]
        self.played += 1
        assert len(generations) == len(requests), "the engine took another path"
        return generations


def measure_played_back(
    engine: Measurement,
    jobs: Sequence[DialogueJob],
    protocol: ProtocolSpec,
    *,
    batch_size: int,
    repeats: int,
    out_path: Path,
) -> Measurement:
    """The engine's own time: ``engine``'s run again, its student's replies played back; the
    median of ``repeats`` runs."""
    runs = []
    for _ in range(repeats):
        student = PlayedBack(engine.generations)
        run = measure_engine(
            engine.backend, "played back", student, jobs, protocol,
            batch_size=batch_size, out_path=out_path,
        )  # fmt: skip
        runs.append(run)
    return sorted(runs, key=lambda run: run.seconds)[len(runs) // 2]


def measure_replays(generator: Generator, engine: Measurement, *, repeats: int) -> list[Call]:
    """The engine's first round's requests of the dialogues its last round played, and that
    last round, sent again (the median of ``repeats`` calls each): the first round's call
    against the last's, with the batch size and the prefill taken out of the comparison. The
    last round goes first: the transformers backend keeps one prefix a dialogue, its latest
    call's, and the first round's prompts are prefixes of the last's, not the reverse."""
    last = engine.requests[-1]
    going = {request.seed for request in last}  # a job's seed is its own (make_jobs)
    first = [request for request in engine.requests[0] if request.seed in going]
    medians = {}
    for name, requests in (("last", last), ("first", first)):
        timed = TimedGenerator(generator)
        for _ in range(repeats):
            timed.generate(requests)
        medians[name] = _median_call(timed.calls)
    return [medians["first"], medians["last"]]


def bench_backend(
    args: argparse.Namespace, backend: str, folder: Path
) -> tuple[list[Measurement], list[Call]]:
    """The raw, engine, played-back and one-at-a-time measurements, and the replayed first and
    last rounds."""
    params = {"max_new_tokens": args.max_new_tokens, "temperature": args.temperature}
    params.update(BACKEND_PARAMS.get(backend, {}))
    started = time.perf_counter()
    generator = load_generator(RoleSpec(backend, args.model, params))
    print(f"{backend}: loaded in {time.perf_counter() - started:.1f} s ({generator!r})")
    jobs = make_jobs(args.dialogues)
    protocol = ProtocolSpec(mode="didactic", max_turns=args.max_turns)
    try:
        # Warm-up (kernels, caches, vLLM's first scheduling) outside every timing.
        generator.generate([first_turn_request(job, protocol) for job in jobs[:8]])
        raw = measure_raw(backend, generator, jobs, protocol, repeats=args.raw_repeats)
        engine = measure_engine(
            backend, "engine", generator, jobs, protocol,
            batch_size=args.batch_size or args.dialogues,
            out_path=folder / f"{backend}-engine.jsonl",
        )  # fmt: skip
        played_back = measure_played_back(
            engine, jobs, protocol, batch_size=args.batch_size or args.dialogues,
            repeats=args.raw_repeats, out_path=folder / f"{backend}-played-back.jsonl",
        )  # fmt: skip
        replayed = measure_replays(generator, engine, repeats=args.raw_repeats)
        single = measure_engine(
            backend, "one-at-a-time", generator, jobs[: args.one_at_a_time], protocol,
            batch_size=1, out_path=folder / f"{backend}-single.jsonl",
        )  # fmt: skip
    finally:
        close = getattr(generator, "close", None)
        if close is not None:
            close()
    return [raw, engine, played_back, single], replayed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="checkpoint directory (HF format)")
    parser.add_argument("--backends", default="transformers,vllm")
    parser.add_argument("--dialogues", type=int, default=256)
    parser.add_argument("--max-turns", type=int, default=5)
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument(
        "--batch-size", type=int, default=0, help="engine batch size (default: --dialogues)"
    )
    parser.add_argument("--one-at-a-time", type=int, default=16, metavar="N")
    parser.add_argument(
        "--raw-repeats", type=int, default=3, help="raw calls made; the median one is reported"
    )
    args = parser.parse_args()
    if not Path(args.model, "config.json").is_file():
        parser.error(f"--model {args.model!r} is not a checkpoint directory (no config.json)")

    folder = Path(tempfile.mkdtemp(prefix="dialab-bench-engine-"))
    print(
        f"model {args.model} · {args.dialogues} dialogues · didactic, up to {args.max_turns} "
        f"turns · max {args.max_new_tokens} new tokens · temperature {args.temperature}\n"
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"load average {_load()} · rows written to {folder}"
    )
    results: list[Measurement] = []
    replays: dict[str, list[Call]] = {}
    for backend in (name.strip() for name in args.backends.split(",")):
        measured, replays[backend] = bench_backend(args, backend, folder)
        results.extend(measured)

    print()
    header = (
        f"{'backend':<13} {'path':<14} {'dialogues':>9} {'calls':>6} {'replies':>7} "
        f"{'tokens':>7} {'wall s':>7} {'in gen s':>8} {'persist s':>9} {'tokens/s':>9}"
    )
    print(header)
    print("-" * len(header))
    for m in results:
        print(
            f"{m.backend:<13} {m.path:<14} {m.dialogues:>9} {m.generate_calls:>6} "
            f"{m.student_generations:>7} {m.tokens:>7} {m.seconds:>7.2f} "
            f"{m.generate_seconds:>8.2f} {m.persist_seconds:>9.3f} {m.tokens_per_second:>9.0f}"
        )
    print(f"load average at the end: {_load()}")
    print()
    print(
        "Student generate calls (raw, then the engine's rounds): batch, prompt length (of it "
        "reused from the prefix cache), speed"
    )
    for m in results:
        if m.path in ("one-at-a-time", "played back"):
            continue
        for number, call in enumerate(m.calls, start=1):
            label = "raw" if m.path.startswith("raw") else f"round {number}"
            print(_call_line(m.backend, label, call))
    print()
    print(
        "The last round against the first, the same dialogues, sent again with their prompts "
        "cached: what the last round's longer context costs each new token"
    )
    for backend, calls in replays.items():
        for label, call in zip(("round 1", "last"), calls, strict=True):
            print(_call_line(backend, label, call))
    print()
    print(
        "Headlines, per backend (targets): the engine's tokens/s over one raw call's (>= 0.9) "
        "and over one dialogue at a time (>= 10); its last round's tokens/s over its first "
        "(>= 0.8), and that ratio replayed, batch and prefill taken out (no target); its "
        "overhead, 1 - its generate seconds / its wall seconds (verifier, teacher, persistence; "
        "<= 0.03), and the same share measured with the replies played back (its own seconds "
        "/ its wall seconds)"
    )
    for backend in dict.fromkeys(m.backend for m in results):
        raw, engine, played_back, single = (m for m in results if m.backend == backend)
        first, last = engine.calls[0], engine.calls[-1]
        replayed_first, replayed_last = replays[backend]
        print(
            f"{backend}_engine_over_raw: "
            f"{engine.tokens_per_second / raw.tokens_per_second:.2f}\n"
            f"{backend}_last_round_over_first: "
            f"{_speed(last) / _speed(first):.2f}\n"
            f"{backend}_replayed_last_round_over_first: "
            f"{_speed(replayed_last) / _speed(replayed_first):.2f}\n"
            f"{backend}_engine_over_one_at_a_time: "
            f"{engine.tokens_per_second / single.tokens_per_second:.1f}\n"
            f"{backend}_engine_overhead: {1 - engine.generate_seconds / engine.seconds:.3f}\n"
            f"{backend}_engine_overhead_played_back: {played_back.seconds / engine.seconds:.3f}"
        )


def forget_prefixes(generator: Generator) -> None:
    """Every arm starts from a cold prefix cache: the raw calls' prompts are the engine's first
    round, and a cache warmed by one arm would flatter the next."""
    forget = getattr(generator, "forget_prefixes", None)
    if forget is not None:
        forget()


def _speed(call: Call) -> float:
    return call.tokens / call.seconds


def _median_call(calls: Sequence[Call]) -> Call:
    """The call of median speed (on a shared machine a single call can land on a busy moment)."""
    return sorted(calls, key=_speed)[len(calls) // 2]


def _call_line(backend: str, label: str, call: Call) -> str:
    return (
        f"  {backend:<13} {label:<8} batch {call.batch:>4} · mean prompt "
        f"{call.mean_prompt_tokens:>6.1f} tokens ({call.mean_cached_tokens:>6.1f} cached) · "
        f"{call.tokens:>6} tokens (longest {call.longest:>3}) in {call.seconds:>6.2f} s = "
        f"{_speed(call):>7.0f} tokens/s"
    )


def _load() -> str:
    return " ".join(f"{load:.1f}" for load in os.getloadavg())


if __name__ == "__main__":
    main()

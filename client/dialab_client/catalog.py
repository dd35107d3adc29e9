"""``lab.task_sets``, ``lab.models``, ``lab.protocols``: what runs are made of, made and read as
the task, model and protocol pages make them."""

from __future__ import annotations

import builtins
import json
import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dialab_client.errors import DialabError
from dialab_client.models import (
    Model,
    Protocol,
    Task,
    TaskImport,
    TasksAdded,
    TaskSet,
    parse_list,
    parse_one,
)

if TYPE_CHECKING:
    from dialab_client.client import Dialab


class TaskSets:
    def __init__(self, lab: Dialab) -> None:
        self.lab = lab

    def list(self, query: str = "") -> builtins.list[TaskSet]:
        """Every task set, newest first (``query`` searches names and descriptions)."""
        walked = [TaskSet.parse(s) for s in self.lab.pages("/task-sets", {"q": query})]
        return walked[::-1]  # walked in id order: the oldest first

    def get(self, task_set_id: int) -> TaskSet:
        """One set, with its versions."""
        return TaskSet.parse(self.lab.request("GET", f"/task-sets/{task_set_id}"))

    def create(self, name: str, description: str = "") -> TaskSet:
        body = {"name": name, "description": description}
        return TaskSet.parse(self.lab.request("POST", "/task-sets", json=body))

    def tasks(self, task_set_id: int, query: str = "") -> Iterator[Task]:
        """The set's tasks in order, with their private references."""
        tasks = self.lab.pages(
            f"/task-sets/{task_set_id}/tasks",
            {"q": query},
            key="position",
            after="after_position",
            start=-1,
        )
        for task in tasks:
            yield parse_one(Task, task)

    def add(self, task_set_id: int, tasks: Iterable[Mapping[str, Any]]) -> TasksAdded:
        """Append tasks (dicts as in Dialab's own JSONL: ``prompt``, ``reference``,
        ``verifier_kind``, ...), all or none: one the import would refuse raises
        ``DialabError`` naming it (``task 3: ...``). A set that runs used takes them in its next
        version, which the answer's ``task_set`` is."""
        body = self.lab.request(
            "POST", f"/task-sets/{task_set_id}/tasks", json={"tasks": [dict(t) for t in tasks]}
        )
        return TasksAdded(
            task_set=TaskSet.parse(body["task_set"]),
            added=body["added"],
            new_version=body["new_version"],
        )

    def import_file(
        self,
        path: str | Path,
        *,
        name: str,
        file_format: str = "",
        mapping: Mapping[str, str] | None = None,
        verifier_kind: str = "",
        domain: str = "",
        wait: bool = True,
        timeout: float | None = None,
    ) -> TaskImport:
        """Import a JSONL, JSON or CSV file into a new task set, or Dialab's own JSONL
        (``file_format="dialab"``). ``mapping``: task field -> the file's key or column
        (``{"prompt": "question", "answer": "solution"}``; without it, the import page's guess);
        ``verifier_kind``, ``domain``: defaults for records without one. A file whose first
        records the mapping cannot read raises ``DialabError`` naming the line. With ``wait``,
        returns once a worker has imported it (``task_set`` is then its id)."""
        form = {
            "name": name, "file_format": file_format, "verifier_kind": verifier_kind,
            "domain": domain, "mapping": json.dumps(dict(mapping)) if mapping else "",
        }  # fmt: skip
        with open(path, "rb") as file:
            files = {"file": (Path(path).name, file)}
            answer = self.lab.request("POST", "/task-sets/import", data=form, files=files)
        job = parse_one(TaskImport, answer)
        return self.wait(job.id, timeout=timeout) if wait else job

    def generate(
        self,
        family: str,
        *,
        count: int = 100,
        seed: int = 0,
        name: str = "",
        knobs: Mapping[str, Any] | None = None,
        wait: bool = True,
        timeout: float | None = None,
    ) -> TaskImport:
        """Generate a task set from a procedural family (``families()`` lists them and their
        knobs; knobs left out take their defaults)."""
        body = {"family": family, "count": count, "seed": seed, "name": name}
        body["knobs"] = dict(knobs or {})
        job = parse_one(TaskImport, self.lab.request("POST", "/task-sets/generate", json=body))
        return self.wait(job.id, timeout=timeout) if wait else job

    def families(self) -> builtins.list[dict[str, Any]]:
        """The generator families, each with its knobs (name, kind, default, bounds, help)."""
        found: builtins.list[dict[str, Any]] = self.lab.request("GET", "/task-sets/families")
        return found

    def job(self, job_id: int) -> TaskImport:
        return parse_one(TaskImport, self.lab.request("GET", f"/task-sets/imports/{job_id}"))

    def wait(
        self, job_id: int, *, poll_seconds: float = 1.0, timeout: float | None = None
    ) -> TaskImport:
        """Wait for an import or generation job; ``DialabError`` with its error if it failed."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            job = self.job(job_id)
            if job.status == "failed":
                raise DialabError(422, f"The import failed: {job.error}")
            if job.is_finished:
                return job
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"import {job_id} still {job.status} after {timeout} s")
            time.sleep(poll_seconds)


class Models:
    def __init__(self, lab: Dialab) -> None:
        self.lab = lab

    def list(self, *, include_retired: bool = False) -> builtins.list[Model]:
        """The models a run may use (and the retired ones, with ``include_retired``)."""
        params = {"include_retired": include_retired}
        return parse_list(Model, self.lab.request("GET", "/models", params=params))

    def register(
        self,
        name: str,
        backend: str,
        location: str = "",
        *,
        generation_params: Mapping[str, Any] | None = None,
        description: str = "",
    ) -> Model:
        """Register a model by the models page's rules (a checkpoint directory for transformers
        and vLLM, a policy for scripted, an http(s) endpoint for openai; never a key: name its
        environment variable in ``generation_params={"api_key_env": ...}``)."""
        body = {
            "name": name, "backend": backend, "location": location,
            "generation_params": dict(generation_params or {}), "description": description,
        }  # fmt: skip
        return parse_one(Model, self.lab.request("POST", "/models", json=body))

    def retire(self, model_id: int, *, retired: bool = True) -> Model:
        """Take a model out of the launch forms (``retired=False`` brings it back)."""
        body = self.lab.request("POST", f"/models/{model_id}/retire", json={"retired": retired})
        return parse_one(Model, body)


class Protocols:
    def __init__(self, lab: Dialab) -> None:
        self.lab = lab

    def list(self, *, include_retired: bool = False) -> builtins.list[Protocol]:
        params = {"include_retired": include_retired}
        return parse_list(Protocol, self.lab.request("GET", "/protocols", params=params))

    def create(self, name: str, **settings: Any) -> Protocol:
        """A protocol by the protocols page's rules: ``mode``, ``max_turns``, ... and
        ``templates`` (name -> text); what is left out takes the page's defaults."""
        body = self.lab.request("POST", "/protocols", json={"name": name, **settings})
        return parse_one(Protocol, body)

    def retire(self, protocol_id: int, *, retired: bool = True) -> Protocol:
        body = self.lab.request(
            "POST", f"/protocols/{protocol_id}/retire", json={"retired": retired}
        )
        return parse_one(Protocol, body)

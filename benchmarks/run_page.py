"""Benchmark a run page in the browser: bytes transferred and time to a drawn chart, cold cache.

    .venv/bin/python benchmarks/run_page.py [--repeats 7] [--tasks 10]

Into a throwaway data directory (SQLite and the file broker; DATABASE_URL and friends are
ignored), it migrates, creates the demo project with ``--tasks`` arithmetic tasks and plays its
evaluation run in this process with the scripted student and teacher (4 dialogues a task: 40 by
default). Then it starts gunicorn twice on loopback, on that database:

- ``partial``: Dialab as configured: the plotly.js-basic bundle that scripts/setup.sh installs,
  under its content-hashed name, gzip-compressed by WhiteNoise;
- ``full``, the baseline: what run pages loaded before, the whole plotly.min.js of the plotly
  Python package, uncompressed. A settings module that the benchmark writes into its temporary
  directory points ``DIALAB_VENDOR_DIR`` at a folder holding only that file (under a hashed
  name the finder accepts), so production code carries no switch for it.

Headless Chromium opens the run page in a fresh browser context each time (an empty cache),
alternating the servers, after one unmeasured load of each. From the page itself it records:

- page weight: ``transferSize`` of the document and of every resource it loaded (Resource
  Timing: bytes as received, compressed, with headers); also the scripts' share;
- chart drawn: ``performance.now()`` (ms since navigation start) when ``#accuracy-chart
  .main-svg`` appears, seen by a MutationObserver installed before any page script runs; and
  when its first scatter trace is in the SVG.

``--latency-ms`` and ``--mbps`` throttle the network (Chromium's emulation) to look at a remote
user; by default the browser talks to loopback. Medians print per variant, headline figures
last. The page must draw with no Content-Security-Policy violation, or the benchmark stops.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CHROMIUM = os.environ.get("DIALAB_CHROMIUM", "/usr/bin/chromium")
CHART = "#accuracy-chart"

# Installed before any page script: notes when the chart's SVG, then its first trace, appear.
OBSERVE_CHART = f"""
(() => {{
  const seen = (window.__dialabChart = {{}});
  const look = () => {{
    if (seen.svg === undefined && document.querySelector("{CHART} .main-svg")) {{
      seen.svg = performance.now();
    }}
    if (seen.traces === undefined && document.querySelector("{CHART} .scatterlayer .trace")) {{
      seen.traces = performance.now();
    }}
    return seen.svg !== undefined && seen.traces !== undefined;
  }};
  new MutationObserver((records, observer) => {{ if (look()) observer.disconnect(); }})
    .observe(document, {{ childList: true, subtree: true }});
}})();
"""

COLLECT = """
() => {
  const navigation = performance.getEntriesByType("navigation")[0];
  const resources = performance.getEntriesByType("resource");
  const sum = (entries) => entries.reduce((total, entry) => total + entry.transferSize, 0);
  const plotly = resources.filter((entry) => entry.name.includes("/vendor/plotly"));
  return {
    chart_ms: window.__dialabChart.svg,
    traces_ms: window.__dialabChart.traces,
    html_ms: navigation.responseEnd,
    dom_content_loaded_ms: navigation.domContentLoadedEventEnd,
    load_ms: navigation.loadEventEnd,
    page_bytes: navigation.transferSize + sum(resources),
    script_bytes: sum(resources.filter((entry) => entry.initiatorType === "script")),
    plotly_bytes: sum(plotly),
    plotly_decoded_bytes: plotly.reduce((total, entry) => total + entry.decodedBodySize, 0),
    requests: resources.length + 1,
  };
}
"""


def prepare_environment(data_dir: Path) -> None:
    """The embedded defaults, in ``data_dir``: never the developer's database or broker."""
    for name in ("DATABASE_URL", "CELERY_BROKER_URL", "CACHE_URL", "DEBUG"):
        os.environ.pop(name, None)
    os.environ["DIALAB_DATA_DIR"] = str(data_dir)
    os.environ["DJANGO_SETTINGS_MODULE"] = "webapp.settings"


def seed(tasks: int) -> tuple[str, str, str, int]:
    """A finished evaluation run with stored dialogues. Returns (run page path, session cookie
    name, session key, dialogues)."""
    import django

    django.setup()
    from importlib import import_module

    from django.conf import settings
    from django.core.management import call_command
    from django.urls import reverse

    from webapp.demo.services import demo_project_create
    from webapp.dialogues.models import Dialogue
    from workers.evaluation import execute_evaluation

    call_command("migrate", verbosity=0)
    project = demo_project_create(task_count=tasks)
    assert project.run is not None
    execute_evaluation(project.run.pk, worker="benchmark", background_heartbeat=False)
    project.run.refresh_from_db()
    dialogues = Dialogue.objects.filter(run=project.run).count()
    if not project.run.is_finished or dialogues == 0:
        raise SystemExit(f"The run did not finish ({project.run.status}, {dialogues} dialogues).")

    session = import_module(settings.SESSION_ENGINE).SessionStore()
    session["_auth_user_id"] = str(project.user.pk)
    session["_auth_user_backend"] = "django.contrib.auth.backends.ModelBackend"
    session["_auth_user_hash"] = project.user.get_session_auth_hash()
    session.create()
    path = reverse("run_detail", args=[project.run.pk])
    return path, settings.SESSION_COOKIE_NAME, str(session.session_key), dialogues


def full_bundle_settings(work: Path) -> str:
    """The baseline's settings module: Dialab's, serving the plotly package's plotly.min.js."""
    spec = importlib.util.find_spec("plotly")
    assert spec is not None and spec.origin is not None, "the plotly package is not installed"
    full = Path(spec.origin).parent / "package_data" / "plotly.min.js"
    vendor = work / "full-bundle"
    vendor.mkdir()
    digest = hashlib.sha256(full.read_bytes()).hexdigest()[:12]
    # The finder serves plotly-basic.<hash>.min.js; no .gz beside it, so it goes uncompressed.
    shutil.copyfile(full, vendor / f"plotly-basic.{digest}.min.js")
    (work / "full_bundle_settings.py").write_text(
        f"from webapp.settings import *  # noqa: F403\nDIALAB_VENDOR_DIR = {str(vendor)!r}\n"
    )
    return "full_bundle_settings"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(settings_module: str, work: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": settings_module,
        "PYTHONPATH": os.pathsep.join([str(work), str(ROOT)]),
    }
    gunicorn = Path(sys.executable).with_name("gunicorn")
    process = subprocess.Popen(
        [
            str(gunicorn), "webapp.wsgi:application", f"--bind=127.0.0.1:{port}", "--workers=2",
            "--worker-tmp-dir=/dev/shm", "--log-level=warning",
        ],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"{base}/healthz", timeout=2).read()
            return process, base
        except (urllib.error.URLError, ConnectionError):
            if process.poll() is not None:
                break
            time.sleep(0.2)
    process.kill()
    _, stderr = process.communicate()
    raise SystemExit(f"gunicorn ({settings_module}) did not start:\n{stderr.decode()[-3000:]}")


def load(browser: Any, base: str, path: str, cookie: tuple[str, str], args: Any) -> dict[str, Any]:
    """One cold load of the run page in a fresh context; its measures."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.add_cookies([{"name": cookie[0], "value": cookie[1], "url": base}])
    context.add_init_script(OBSERVE_CHART)
    violations: list[str] = []
    context.on(
        "console",
        lambda message: (
            violations.append(message.text) if "Content Security Policy" in message.text else None
        ),
    )
    page = context.new_page()
    if args.latency_ms or args.mbps:
        cdp = context.new_cdp_session(page)
        cdp.send("Network.enable")
        rate = args.mbps * 1_000_000 / 8 if args.mbps else -1
        cdp.send(
            "Network.emulateNetworkConditions",
            {
                "offline": False, "latency": args.latency_ms, "downloadThroughput": rate,
                "uploadThroughput": rate,
            },
        )  # fmt: skip
    response = page.goto(base + path, wait_until="load", timeout=120_000)
    if response is None or response.status != 200:
        raise SystemExit(f"{base + path} answered {response.status if response else None}")
    page.wait_for_function(
        "() => window.__dialabChart.svg !== undefined && window.__dialabChart.traces !== undefined",
        timeout=120_000,
    )
    measures: dict[str, Any] = page.evaluate(COLLECT)
    context.close()
    if violations:
        raise SystemExit("Content-Security-Policy violations:\n" + "\n".join(violations))
    return measures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=7, help="measured loads per variant")
    parser.add_argument("--tasks", type=int, default=10, help="demo tasks (4 dialogues each)")
    parser.add_argument("--latency-ms", type=float, default=0, help="added round-trip latency")
    parser.add_argument("--mbps", type=float, default=0, help="bandwidth limit (0: none)")
    args = parser.parse_args()
    if not Path(CHROMIUM).exists():
        raise SystemExit(f"Chromium is needed at {CHROMIUM} (or set DIALAB_CHROMIUM).")

    work = Path(tempfile.mkdtemp(prefix="dialab-run-page-"))
    servers: list[subprocess.Popen[bytes]] = []
    try:
        prepare_environment(work / "data")
        started = time.perf_counter()
        path, cookie_name, session_key, dialogues = seed(args.tasks)
        from webapp.core.staticfinders import plotly_js_path

        if plotly_js_path() is None:
            raise SystemExit("No plotly.js bundle is installed: run scripts/setup.sh first.")
        print(f"seeded a run of {dialogues} dialogues in {time.perf_counter() - started:.1f} s")
        bases: dict[str, str] = {}
        for variant, module in (
            ("partial", "webapp.settings"),
            ("full", full_bundle_settings(work)),
        ):
            process, bases[variant] = start_server(module, work)
            servers.append(process)

        from playwright.sync_api import sync_playwright

        results: dict[str, list[dict[str, Any]]] = {"partial": [], "full": []}
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=CHROMIUM,
                headless=True,
                args=[
                    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update",
                    "--disable-sync",
                ],
            )  # fmt: skip
            cookie = (cookie_name, session_key)
            for variant in ("partial", "full"):  # warm the servers; not measured
                load(browser, bases[variant], path, cookie, args)
            for repeat in range(args.repeats):
                order = ("partial", "full") if repeat % 2 == 0 else ("full", "partial")
                for variant in order:
                    measures = load(browser, bases[variant], path, cookie, args)
                    results[variant].append(measures)
                    print(
                        f"  {variant:7} #{repeat + 1}: HTML {measures['html_ms']:5.0f} ms, "
                        f"chart {measures['chart_ms']:5.0f} ms, "
                        f"traces {measures['traces_ms']:5.0f} ms, "
                        f"{measures['page_bytes'] / 1024:7.0f} KB in {measures['requests']} "
                        "requests",
                        flush=True,
                    )
            browser.close()
    finally:
        for process in servers:
            process.terminate()
            process.wait(timeout=20)
        shutil.rmtree(work, ignore_errors=True)

    def median(variant: str, key: str) -> float:
        return float(statistics.median(row[key] for row in results[variant]))

    network = (
        f"{args.latency_ms:g} ms added latency, {args.mbps:g} Mbit/s"
        if args.latency_ms or args.mbps
        else "loopback, no throttling"
    )
    print(f"\nRun page of {dialogues} dialogues, cold cache, {network}, median of {args.repeats}:")
    print(
        f"{'':8} {'HTML':>8} {'chart':>8} {'traces':>8} {'DOM ready':>10} {'load':>8} {'page':>9} "
        f"{'scripts':>9} {'plotly.js':>10} {'(decoded)':>10}"
    )
    for variant in ("partial", "full"):
        times = [median(variant, key) for key in ("html_ms", "chart_ms", "traces_ms")]
        times += [median(variant, key) for key in ("dom_content_loaded_ms", "load_ms")]
        sizes = [median(variant, key) / 1024 for key in ("page_bytes", "script_bytes")]
        sizes += [median(variant, key) / 1024 for key in ("plotly_bytes", "plotly_decoded_bytes")]
        print(
            f"{variant:8} {times[0]:6.0f}ms {times[1]:6.0f}ms {times[2]:6.0f}ms {times[3]:8.0f}ms "
            f"{times[4]:6.0f}ms "
            f"{sizes[0]:7.0f}KB {sizes[1]:7.0f}KB {sizes[2]:8.0f}KB {sizes[3]:8.0f}KB"
        )
    chart, chart_full = median("partial", "chart_ms"), median("full", "chart_ms")
    weight, weight_full = median("partial", "page_bytes"), median("full", "page_bytes")
    print()
    print(f"chart_drawn_ms: {chart:.0f}")
    print(f"page_weight_kb: {weight / 1024:.0f}")
    print(f"chart_drawn_ms_full_bundle: {chart_full:.0f}")
    print(f"page_weight_kb_full_bundle: {weight_full / 1024:.0f}")
    print(f"chart_drawn_speedup_vs_full_bundle: {chart_full / chart:.2f}")
    print(f"page_weight_ratio_vs_full_bundle: {weight / weight_full:.3f}")


if __name__ == "__main__":
    main()

"""Dialab settings: one module, driven by the environment.

With no environment at all Dialab runs on its embedded defaults: SQLite and a file-based Celery
broker under the data directory, so a laptop needs nothing but the Python packages.
``DATABASE_URL=postgres://...`` switches to PostgreSQL, ``CELERY_BROKER_URL=redis://...`` to Redis.
"""

from __future__ import annotations

import os
import re
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import jinja2
from csp.constants import NONE, SELF
from django.core.exceptions import ImproperlyConfigured

from models_gpu.spec.credentials import key_env_rule
from webapp.core import queues
from webapp.envconfig import (
    broker_url,
    cache_config,
    database_config,
    ensure_directory,
    env_bool,
    env_int,
    env_list,
    env_str,
    secret_key,
)

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = ensure_directory(
    Path(env_str("DIALAB_DATA_DIR", str(BASE_DIR / "data"))).resolve(), "data"
)

DEBUG = env_bool("DEBUG", False)
SECRET_KEY = secret_key(os.environ, DATA_DIR)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

# Behind a TLS-terminating proxy: secure cookies, HSTS, and trust the proxy's scheme header.
if env_bool("DIALAB_HTTPS", False):
    SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = True
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = True
    SECURE_HSTS_SECONDS = env_int("DIALAB_HSTS_SECONDS", 3600)

# Content-Security-Policy (django-csp): scripts, styles, fonts and fetches come only from this
# site's own static files and URLs, so markup that slips into a page can neither run script nor
# reach another origin. No inline script and no eval: htmx runs with allowEval off (base.html)
# and charts are drawn by static/dialab/charts.js from JSON data, not by inline <script>. No
# inline style either (templates use classes from dialab.css); the run page alone admits the
# stylesheets plotly.js writes, by their hashes (webapp.core.plotly_csp).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "img-src": [SELF, "data:"],
        "object-src": [NONE],
        "base-uri": [NONE],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    }
}

INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "axes",
    "django_htmx",
    "csp",
    "template_partials",
    # The HTTP API (webapp.api); its documentation page's scripts are served from here.
    "ninja",
    "webapp.core",
    "webapp.accounts",
    "webapp.tasks",
    "webapp.models_registry",
    "webapp.runs",
    "webapp.dialogues",
    "webapp.annotations",
    "webapp.transcripts",
    "webapp.labelling",
    "webapp.training",
    "webapp.experiments",
    "webapp.people",
    "webapp.forks",
    "webapp.demo",
    "webapp.api",
    # Management commands that need model code (generators, verifiers) live with the workers.
    "workers",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Every page requires login unless its view is marked @login_not_required.
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Last, as django-axes requires: turns a locked-out login attempt into the lockout page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "webapp.urls"
WSGI_APPLICATION = "webapp.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "webapp.core.context_processors.navigation",
            ],
        },
    },
    # The hot fragments of the transcript list (webapp.core.fragments says why). Jinja2 escapes
    # every value, as Django does.
    {
        "NAME": "jinja2",
        "BACKEND": "django.template.backends.jinja2.Jinja2",
        "DIRS": [BASE_DIR / "templates" / "jinja2"],
        "APP_DIRS": False,
        "OPTIONS": {
            "autoescape": True,
            "undefined": jinja2.StrictUndefined,
            "environment": "webapp.core.fragments.environment",
        },
    },
]

DATABASES = {
    "default": database_config(env_str("DATABASE_URL", f"sqlite:///{DATA_DIR / 'dialab.sqlite3'}"))
}
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # A file, not memory, so that a worker process started by a test can share the test database.
    DATABASES["default"]["TEST"] = {"NAME": str(DATA_DIR / "test_dialab.sqlite3")}

# Redis when CACHE_URL names one; sessions are then read from it (and written through to the
# database), which saves a query on every page. Without a shared cache they stay in the database
# alone: a per-process cache would keep serving a session that another process logged out.
CACHE_URL = env_str("CACHE_URL", "")
CACHES = {"default": cache_config(CACHE_URL)}
SESSION_ENGINE = (
    "django.contrib.sessions.backends.cached_db"
    if CACHE_URL
    else "django.contrib.sessions.backends.db"
)

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
AUTH_USER_MODEL = "accounts.User"
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

# Login throttle (django-axes): after DIALAB_LOGIN_FAILURE_LIMIT wrong passwords for one username
# from one address, that pair is refused, right password or not, until DIALAB_LOGIN_COOLOFF_MINUTES
# pass with no further attempt. Keyed on the pair so that one user's typos never lock out
# another person, nor the same person on another machine. Unlock sooner with
# `manage.py axes_reset_username NAME`.
AUTHENTICATION_BACKENDS = [
    # First, so a locked-out pair is refused before any password is checked. It logs no one in
    # itself, so force_login (tests) goes on using ModelBackend.
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env_int("DIALAB_LOGIN_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("DIALAB_LOGIN_COOLOFF_MINUTES", 15, minimum=1))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
# A successful login clears that pair's earlier failures, so occasional typos never add up.
AXES_RESET_ON_SUCCESS = True
# No table of every successful login: nothing in Dialab reads it, and it would only grow.
AXES_DISABLE_ACCESS_LOG = True
AXES_LOCKOUT_CALLABLE = "webapp.accounts.views.login_locked_out"
# No "AXES: BEGIN ..." banner from every process and management command at start-up.
AXES_VERBOSE = False
# The address a login attempt comes from (webapp.accounts.client_address): the connection's own
# (REMOTE_ADDR) unless the operator names the header a reverse proxy in front sets, and how many
# proxies append to it. Never a header by default: anyone can send X-Forwarded-For.
AXES_CLIENT_IP_CALLABLE = "webapp.accounts.client_address.client_address"
DIALAB_TRUSTED_PROXY_HEADER = env_str("DIALAB_TRUSTED_PROXY_HEADER", "")
if DIALAB_TRUSTED_PROXY_HEADER and not re.fullmatch(r"[A-Za-z0-9-]+", DIALAB_TRUSTED_PROXY_HEADER):
    raise ImproperlyConfigured(
        "DIALAB_TRUSTED_PROXY_HEADER must be a header's name, e.g. X-Forwarded-For; "
        f"got {DIALAB_TRUSTED_PROXY_HEADER!r}."
    )
if os.environ.get("DIALAB_TRUSTED_PROXY_COUNT", "").strip() and not DIALAB_TRUSTED_PROXY_HEADER:
    raise ImproperlyConfigured(
        "DIALAB_TRUSTED_PROXY_COUNT is set but DIALAB_TRUSTED_PROXY_HEADER is not: name the "
        "header your proxy sets (e.g. X-Forwarded-For), or the count does nothing."
    )
DIALAB_TRUSTED_PROXY_COUNT = env_int("DIALAB_TRUSTED_PROXY_COUNT", 1, minimum=1)

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = ensure_directory(DATA_DIR / "staticfiles", "static files")
STATICFILES_DIRS = [BASE_DIR / "static"]
STATICFILES_FINDERS = [
    "django.contrib.staticfiles.finders.FileSystemFinder",
    "django.contrib.staticfiles.finders.AppDirectoriesFinder",
    # The partial plotly.js bundle that setup installs (not in the repository): see below.
    "webapp.core.staticfinders.PlotlyJsFinder",
]
# Serve straight from the finders: no collectstatic step for the embedded default.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG
# Third-party JavaScript that scripts/setup.sh installs (from npm's registry) into the Python
# environment, as the Python packages are: inside .venv (or the image's /opt/venv), so every
# data directory of an installation shares it and git never sees it.
DIALAB_VENDOR_DIR = Path(sys.prefix) / "share" / "dialab" / "vendor"
# The documentation site (mkdocs.yml builds it there; scripts/setup.sh runs the build), at /docs/.
DIALAB_DOCS_DIR = Path(sys.prefix) / "share" / "dialab" / "docs"
# plotly.js is served as vendor/plotly-basic.<content hash>.min.js: a new bundle gets a new name,
# so WhiteNoise marks it immutable: browsers keep it without asking again (other files: 60 s).
WHITENOISE_IMMUTABLE_FILE_TEST = r"/vendor/plotly-basic\.[0-9a-f]{12}\.min\.js$"

# Training data and checkpoints: on storage that the web server and the training workers share
# (a dataset snapshot is written by the web process at launch and read by the worker; a trained
# checkpoint is written by the worker and read by evaluation workers).
DIALAB_DATASETS_DIR = DATA_DIR / "datasets"
DIALAB_TRAINING_DIR = DATA_DIR / "training"

MEDIA_ROOT = DATA_DIR / "media"
MEDIA_URL = "media/"  # never served: uploads are read by workers, not downloaded
# Largest accepted task upload; bigger files are refused before anything is imported.
DIALAB_MAX_UPLOAD_BYTES = env_int("DIALAB_MAX_UPLOAD_MB", 512, minimum=1) * 1024 * 1024
# Bounds on parsing untrusted task data (webapp.tasks.bounds), so that no upload can make the
# web process or a worker recurse or grow without end: JSON nesting depth; one record (a JSONL
# line, a JSON item, a CSV row), which is all a reader holds in memory at a time; and one task
# field (a prompt, an answer, the tests), in imports and in the task editor alike.
DIALAB_MAX_JSON_DEPTH = env_int("DIALAB_MAX_JSON_DEPTH", 100, minimum=1)
DIALAB_MAX_RECORD_BYTES = env_int("DIALAB_MAX_RECORD_MB", 8, minimum=1) * 1024 * 1024
DIALAB_MAX_FIELD_CHARS = env_int("DIALAB_MAX_FIELD_CHARS", 1_000_000, minimum=1)
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024  # larger uploads stream to a temporary file
# Nothing past DIALAB_MAX_UPLOAD_BYTES is stored, in memory or on disk (task imports are the
# only file uploads; a new kind with another limit needs its own check).
FILE_UPLOAD_HANDLERS = [
    "webapp.tasks.imports.upload_handlers.UploadSizeLimitHandler",
    "django.core.files.uploadhandler.MemoryFileUploadHandler",
    "django.core.files.uploadhandler.TemporaryFileUploadHandler",
]

# --- Celery -----------------------------------------------------------------------------------
# The embedded default still runs a real worker process; the broker is a folder of files.
BROKER_DIR = DATA_DIR / "broker"
# "localhost//" only names the (virtual) host; the messages are files under BROKER_DIR.
CELERY_BROKER_URL = broker_url(env_str("CELERY_BROKER_URL", "filesystem://localhost//"))
if CELERY_BROKER_URL.startswith("filesystem://"):
    # Kombu's own, but a message's file appears only once it is whole (webapp.core.broker).
    CELERY_BROKER_TRANSPORT = "webapp.core.broker:Transport"
    ensure_directory(BROKER_DIR / "queue", "broker")
    ensure_directory(BROKER_DIR / "control", "broker")
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(BROKER_DIR / "queue"),
        "data_folder_out": str(BROKER_DIR / "queue"),
        "control_folder": str(BROKER_DIR / "control"),
        "store_processed": False,
        # How often an idle worker looks for a message: the wait before a job starts. Kombu's
        # default (1 s) was most of a playground reply on the house model; a look is one
        # directory listing (benchmarks/interactive.py measures both).
        "polling_interval": env_int("DIALAB_BROKER_POLL_MS", 100, minimum=10) / 1000,
    }
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_IGNORE_RESULT = True
# One queue per kind of work (webapp.core.queues): interactive work is the default, so nothing
# a person waits for lands behind a batch job; runs are sent to their own queue at dispatch (a run
# with a person in it is interactive), the route below is only a fallback.
CELERY_TASK_DEFAULT_QUEUE = queues.INTERACTIVE
# Declared so that workers, purges and inspection know every queue by name.
CELERY_TASK_QUEUES: dict[str, dict[str, Any]] = {queue.name: {} for queue in queues.QUEUES}
CELERY_TASK_ROUTES = {
    "workers.tasks.run_evaluation": {"queue": queues.BATCH},
    "workers.tasks.run_training": {"queue": queues.BATCH},
}
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True

# The Workers page and the "waiting for" notes ask the workers what they serve and run
# (webapp.core.workers): each ask waits this long for their answers, and is reused this long.
DIALAB_WORKER_INSPECT_SECONDS = env_int("DIALAB_WORKER_INSPECT_MS", 1000, minimum=50) / 1000
DIALAB_WORKER_INSPECT_CACHE_SECONDS = env_int("DIALAB_WORKER_INSPECT_CACHE_SECONDS", 5, minimum=1)

# How often a running job records that it is alive (the run page and a sweeper read it).
DIALAB_HEARTBEAT_SECONDS = env_int("DIALAB_HEARTBEAT_SECONDS", 5, minimum=1)
# How often every worker sweeps for the work of workers that died (workers.recovery); 0: only
# when a worker starts, and by `manage.py resume_stale_runs`.
DIALAB_RECOVERY_SWEEP_SECONDS = env_int("DIALAB_RECOVERY_SWEEP_SECONDS", 30, minimum=0)
# People in the dialogue: a turn left unanswered this long ends its dialogue ("no_answer"); a
# person who opened a turn holds it (no one else can answer) this long after their last keystroke.
DIALAB_PERSON_TURN_TIMEOUT_SECONDS = env_int(
    "DIALAB_PERSON_TURN_TIMEOUT_SECONDS", 7 * 24 * 3600, minimum=1
)
DIALAB_PERSON_CLAIM_SECONDS = env_int("DIALAB_PERSON_CLAIM_SECONDS", 15 * 60, minimum=1)

# Values of these environment variables are redacted from every log line, besides those named
# like keys, tokens, secrets or passwords and those a model may name for its key
# (webapp.core.redaction).
DIALAB_REDACT_ENV = env_list("DIALAB_REDACT_ENV", [])

# Which environment variables a model's api_key_env may name (DIALAB_MODEL_KEY_ENV_PREFIX,
# default DIALAB_MODEL_KEY_, and DIALAB_MODEL_KEY_ENV_ALLOWED, default OPENAI_API_KEY): the rule is
# models_gpu.spec.credentials', read from the environment by the web process and by each worker
# (the backend refuses too), so it is not a Django setting. Checked here so that a bad value
# stops start-up.
try:
    key_env_rule()
except ValueError as error:
    raise ImproperlyConfigured(str(error)) from None

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    # On every handler, so no library's line (httpx logs each request's full URL) shows a secret.
    # The Celery worker replaces the root handlers with its own: workers/log_redaction.py filters
    # those.
    "filters": {
        "redact_secrets": {"()": "webapp.core.redaction.SecretRedactingFilter"},
        "one_line_refusals": {"()": "webapp.core.refusals.OneLineRefusals"},
    },
    "formatters": {
        "django.server": {
            "()": "django.utils.log.ServerFormatter",
            "format": "[{server_time}] {message}",
            "style": "{",
        }
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", "filters": ["redact_secrets"]},
        "django.server": {
            "class": "logging.StreamHandler",
            "formatter": "django.server",
            "filters": ["redact_secrets"],
        },
    },
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {
        # Django's default logging gives these loggers unfiltered handlers of their own (which
        # print before the root handler could redact): "django" now writes through the root
        # handler only, and runserver's request lines (query strings included) are filtered.
        "django": {"level": "INFO"},
        # A 403 is one line (refused GET /path for user x: reason), not a traceback.
        "django.request": {"level": "INFO", "filters": ["one_line_refusals"]},
        "django.server": {"handlers": ["django.server"], "level": "INFO", "propagate": False},
    },
}

"""Dialab settings: one module, driven by the environment.

With no environment at all Dialab runs on its embedded defaults: SQLite and a file-based Celery
broker under the data directory, so a laptop needs nothing but the Python packages.
``DATABASE_URL=postgres://...`` switches to PostgreSQL, ``CELERY_BROKER_URL=redis://...`` to Redis.
"""

from __future__ import annotations

import os
from pathlib import Path

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

INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "django_htmx",
    "template_partials",
    "webapp.core",
    "webapp.accounts",
    "webapp.tasks",
    "webapp.models_registry",
    "webapp.runs",
    "webapp.dialogues",
    "webapp.annotations",
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
    "django_htmx.middleware.HtmxMiddleware",
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
            ],
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
    # plotly.min.js comes from the installed plotly package, not from the repository.
    "webapp.core.staticfinders.PlotlyJsFinder",
]
# Serve straight from the finders: no collectstatic step for the embedded default.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

MEDIA_ROOT = DATA_DIR / "media"
MEDIA_URL = "media/"  # never served: uploads are read by workers, not downloaded
# Largest accepted task upload; bigger files are refused before anything is imported.
DIALAB_MAX_UPLOAD_BYTES = env_int("DIALAB_MAX_UPLOAD_MB", 512, minimum=1) * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024  # larger uploads stream to a temporary file

# --- Celery -----------------------------------------------------------------------------------
# The embedded default still runs a real worker process; the broker is a folder of files.
BROKER_DIR = DATA_DIR / "broker"
# "localhost//" only names the (virtual) host; the messages are files under BROKER_DIR.
CELERY_BROKER_URL = broker_url(env_str("CELERY_BROKER_URL", "filesystem://localhost//"))
if CELERY_BROKER_URL.startswith("filesystem://"):
    ensure_directory(BROKER_DIR / "queue", "broker")
    ensure_directory(BROKER_DIR / "control", "broker")
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(BROKER_DIR / "queue"),
        "data_folder_out": str(BROKER_DIR / "queue"),
        "control_folder": str(BROKER_DIR / "control"),
        "store_processed": False,
    }
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_DEFAULT_QUEUE = "default"
# Declared so that workers, purges and inspection know both queues by name.
CELERY_TASK_QUEUES = {"default": {}, "gpu": {}}
CELERY_TASK_ROUTES = {
    # Generation and training need the model host; everything else is light CPU work.
    "workers.tasks.run_evaluation": {"queue": "gpu"},
    # Imports, generation and verification stay on the default (CPU) queue.
}
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True

# How often a running job records that it is alive (the run page and a sweeper read it).
DIALAB_HEARTBEAT_SECONDS = env_int("DIALAB_HEARTBEAT_SECONDS", 5, minimum=1)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
}

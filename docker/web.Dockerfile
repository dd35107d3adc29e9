# syntax=docker/dockerfile:1
# Dialab web image: Django under gunicorn, plus the one-shot `migrate` service and management
# commands. No torch: the web process never loads model code.
# Build context: the repository root (see docker/compose.yaml).

# The charts' JavaScript: the plotly.js bundle scripts/setup.sh pins, fetched with npm in a stage
# of its own, so that neither Node nor npm is in the image.
FROM node:20-bookworm-slim AS plotly-js
COPY scripts/setup.sh /tmp/setup.sh
RUN bash /tmp/setup.sh --plotly-js /plotly-js

FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore \
    PATH=/opt/venv/bin:$PATH \
    PYTHONPATH=/app \
    DIALAB_DATA_DIR=/data

# A fixed UID shared by all Dialab images, so files on shared volumes have one owner.
RUN useradd --uid 10001 --user-group --create-home --shell /usr/sbin/nologin dialab \
 && install -d -o dialab -g dialab /data \
 && python -m venv /opt/venv

# Dependencies first, from pyproject.toml alone: this layer survives code changes.
COPY pyproject.toml docker/pyproject_deps.py /tmp/build/
RUN --mount=type=cache,target=/root/.cache/pip \
    python /tmp/build/pyproject_deps.py /tmp/build/pyproject.toml serve > /tmp/build/requirements.txt \
 && pip install -r /tmp/build/requirements.txt \
 && rm -rf /tmp/build

# Where settings.DIALAB_VENDOR_DIR looks (<sys.prefix>/share/dialab/vendor), with the .gz that
# WhiteNoise sends to browsers that accept it (as setup.sh writes it outside Docker).
COPY --from=plotly-js /plotly-js /opt/venv/share/dialab/vendor
RUN python -m whitenoise.compress --quiet /opt/venv/share/dialab/vendor

# Then the code, owned by root and read-only for the service user.
WORKDIR /app
COPY manage.py ./
COPY webapp ./webapp
COPY workers ./workers
COPY models_gpu ./models_gpu
COPY templates ./templates
COPY static ./static

USER 10001:10001
EXPOSE 8000
# Worker count comes from WEB_CONCURRENCY (gunicorn reads it); /dev/shm keeps worker heartbeats
# off the container's overlay filesystem. webapp.core.gunicorn_conf redacts secrets (a key in a
# query string) from gunicorn's access and error logs, which Django's logging never sees.
CMD ["gunicorn", "--config=python:webapp.core.gunicorn_conf", "webapp.wsgi:application", "--bind=0.0.0.0:8000", "--worker-tmp-dir=/dev/shm", "--access-logfile=-"]

# syntax=docker/dockerfile:1
# Dialab CPU worker: consumes the `default` queue (imports, verification, metrics).
# torch comes from PyTorch's CPU wheel index, so none of the multi-gigabyte CUDA packages land here.
# Build context: the repository root (see docker/compose.yaml).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore \
    PATH=/opt/venv/bin:$PATH \
    PYTHONPATH=/app \
    DIALAB_DATA_DIR=/data

# bubblewrap: the sandbox model-written code runs in (README, "The code sandbox").
RUN apt-get update \
 && apt-get install -y --no-install-recommends bubblewrap \
 && rm -rf /var/lib/apt/lists/*

# Same UID as the other Dialab images; /models is where the shared `models` volume is mounted.
RUN useradd --uid 10001 --user-group --create-home --shell /usr/sbin/nologin dialab \
 && install -d -o dialab -g dialab /data /models \
 && python -m venv /opt/venv

COPY pyproject.toml docker/pyproject_deps.py /tmp/build/
# The CPU build's version carries a "+cpu" local label, which pip ranks above the plain PyPI
# release of the same number; the check makes a silent fall-back to a CUDA build fail the build.
RUN --mount=type=cache,target=/root/.cache/pip \
    python /tmp/build/pyproject_deps.py /tmp/build/pyproject.toml cpu > /tmp/build/requirements.txt \
 && pip install --extra-index-url https://download.pytorch.org/whl/cpu -r /tmp/build/requirements.txt \
 && python -c "import torch; print('torch', torch.__version__); assert torch.version.cuda is None, 'got a CUDA build of torch'" \
 && rm -rf /tmp/build

WORKDIR /app
COPY manage.py ./
COPY webapp ./webapp
COPY workers ./workers
COPY models_gpu ./models_gpu
COPY templates ./templates
COPY static ./static

USER 10001:10001
CMD ["celery", "-A", "webapp", "worker", "--queues=interactive", "--concurrency=2", "--prefetch-multiplier=1", "--loglevel=INFO", "--hostname=interactive@%h"]

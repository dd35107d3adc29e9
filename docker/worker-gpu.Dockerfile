# syntax=docker/dockerfile:1
# Dialab GPU worker: consumes the `gpu` queue (generation, training), one job at a time.
# Build context: the repository root (see docker/compose.yaml).
#
# The CUDA base and the torch wheel index are build arguments so that they can be moved together:
# torch's CUDA build should not be newer than what the hosts' drivers support. Defaults: CUDA 12.6
# (GPUs up to Hopper). For Blackwell GPUs build with
#   --build-arg CUDA_IMAGE=nvidia/cuda:12.8.1-runtime-ubuntu22.04
#   --build-arg TORCH_INDEX_URL=https://download.pytorch.org/whl/cu128
# EXTRAS=gpu,vllm adds vLLM, which pins its own torch: point TORCH_INDEX_URL at the CUDA build
# that vLLM release expects.
ARG CUDA_IMAGE=nvidia/cuda:12.6.3-runtime-ubuntu22.04
FROM ${CUDA_IMAGE}

ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cu126
ARG EXTRAS=gpu
ARG DEBIAN_FRONTEND=noninteractive

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore \
    PATH=/opt/venv/bin:$PATH \
    PYTHONPATH=/app \
    DIALAB_DATA_DIR=/data

# Ubuntu 22.04 ships Python 3.10; Python 3.11 comes from the deadsnakes PPA. The tools that add
# the PPA are removed again in the same layer. Versions are not pinned: the PPA keeps only its
# latest build of each package.
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends software-properties-common gpg-agent ca-certificates \
 && add-apt-repository -y ppa:deadsnakes/ppa \
 && apt-get update \
 && apt-get install -y --no-install-recommends python3.11 python3.11-venv bubblewrap \
 && apt-get purge -y --auto-remove software-properties-common gpg-agent \
 && rm -rf /var/lib/apt/lists/* \
 && python3.11 -m venv /opt/venv

# Same UID as the other Dialab images; the shared `models` volume is mounted at /models.
RUN useradd --uid 10001 --user-group --create-home --shell /usr/sbin/nologin dialab \
 && install -d -o dialab -g dialab /data /models

COPY pyproject.toml docker/pyproject_deps.py /tmp/build/
# The index's torch carries a "+cu126"-style local label, which pip ranks above PyPI's release of
# the same number. The check prints which CUDA build was installed and fails on a CPU-only one.
RUN --mount=type=cache,target=/root/.cache/pip \
    python /tmp/build/pyproject_deps.py /tmp/build/pyproject.toml "$EXTRAS" > /tmp/build/requirements.txt \
 && pip install --extra-index-url "$TORCH_INDEX_URL" -r /tmp/build/requirements.txt \
 && python -c "import torch; print('torch', torch.__version__, 'CUDA', torch.version.cuda); assert torch.version.cuda, 'got a CPU-only torch'" \
 && rm -rf /tmp/build

WORKDIR /app
COPY manage.py ./
COPY webapp ./webapp
COPY workers ./workers
COPY models_gpu ./models_gpu
COPY templates ./templates
COPY static ./static

USER 10001:10001
# One job at a time, no prefetching: a GPU holds one model run. A fresh child process per job
# hands all GPU memory back between jobs (CUDA caches and vLLM do not release it reliably).
CMD ["celery", "-A", "webapp", "worker", "--queues=gpu", "--concurrency=1", "--prefetch-multiplier=1", "--max-tasks-per-child=1", "--loglevel=INFO", "--hostname=batch@%h"]

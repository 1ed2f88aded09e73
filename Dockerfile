# wyoming-multitts as a container (README, "Installation"): amd64 and arm64.
#
#   docker build -t wyoming-multitts .                                    # CPU (default)
#   docker build --build-arg ACCEL=cuda -t wyoming-multitts:cuda .        # NVIDIA GPU, amd64
#   docker build --build-arg ACCEL=vulkan -t wyoming-multitts:vulkan .    # Vulkan GPU
#   docker run -d -p 10200:10200 -v multitts-data:/data wyoming-multitts [FLAGS]
#
# ACCEL picks the base images, llama.cpp's CMake flags and the torch build (stages below).
# More CMake flags: --build-arg CMAKE_ARGS="-DGGML_NATIVE=ON" (faster, but only on CPUs like the
# build machine's), or e.g. "-DCMAKE_CUDA_ARCHITECTURES=89" to compile CUDA for one GPU only.
# Another CUDA: --build-arg CUDA_VERSION=12.6.3 --build-arg TORCH_INDEX_URL=https://download.pytorch.org/whl/cu126
#
# The builder compiles llama-cpp-python into /app/.venv; the runtime image gets /app (the source
# and .venv, as script/setup lays them out) without compilers. The server runs as user multitts
# (uid 10200) with the models and your catalog in the volume /data.

# Lint: hadolint (tests/test_deploy.py). Its DL3008 (pin apt package versions) is ignored: Debian
# replaces a version with each security update, and a pinned build then fails. DL3006 (tag every
# image) is ignored where FROM names a stage of this file.

ARG ACCEL=cpu
ARG CUDA_VERSION=12.8.1
ARG CUDA_UBUNTU=ubuntu24.04

# ---- per-accelerator base images (BuildKit builds only the ones ACCEL selects)

# The image may run on another CPU than the build machine's: no -march=native. On x86 ggml then
# compiles for AVX2, FMA, F16C and BMI2 (Haswell and later): README, "With Docker", for older CPUs.
FROM debian:trixie-slim AS build-cpu
ENV ACCEL_CMAKE_ARGS="-DGGML_NATIVE=OFF" \
    ACCEL_TORCH_INDEX="https://download.pytorch.org/whl/cpu"

FROM nvidia/cuda:${CUDA_VERSION}-devel-${CUDA_UBUNTU} AS build-cuda
# torch from the index of the same CUDA major.minor as the base image (cu128 = CUDA 12.8)
ENV ACCEL_CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_CUDA=on" \
    ACCEL_TORCH_INDEX="https://download.pytorch.org/whl/cu128"

FROM debian:trixie-slim AS build-vulkan
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends libvulkan-dev glslc spirv-headers \
    && rm -rf /var/lib/apt/lists/*
ENV ACCEL_CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_VULKAN=on" \
    ACCEL_TORCH_INDEX="https://download.pytorch.org/whl/cpu"

FROM debian:trixie-slim AS runtime-cpu

FROM nvidia/cuda:${CUDA_VERSION}-runtime-${CUDA_UBUNTU} AS runtime-cuda

FROM debian:trixie-slim AS runtime-vulkan
# the Vulkan loader and Mesa's drivers (Intel, AMD); run with --device /dev/dri
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends libvulkan1 mesa-vulkan-drivers \
    && rm -rf /var/lib/apt/lists/*

# ---- builder: compile llama-cpp-python, install torch and the server into /app/.venv

# hadolint ignore=DL3006
FROM build-${ACCEL} AS builder
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# Debian's and Ubuntu's apt python3: the runtime stage installs the same one, so the venv works there.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends \
        build-essential ca-certificates cmake git python3 python3-dev python3-venv \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY docker/install-server docker/

ARG TORCH_VERSION=2.13.0
ARG TORCH_INDEX_URL=""
RUN TORCH_INDEX_URL="${TORCH_INDEX_URL:-${ACCEL_TORCH_INDEX}}" docker/install-server venv

ARG LLAMA_CPP_VERSION=0.3.36
ARG CMAKE_ARGS=""
RUN CMAKE_ARGS="${ACCEL_CMAKE_ARGS} ${CMAKE_ARGS}" docker/install-server llama-cpp

COPY pyproject.toml README.md ./
RUN docker/install-server requirements

COPY wyoming_multitts/ wyoming_multitts/
COPY data/ data/
COPY script/run script/
RUN docker/install-server package

# ---- runtime

# hadolint ignore=DL3006
FROM runtime-${ACCEL}
# libgomp1: llama.cpp's OpenMP threads; ca-certificates: model downloads from Hugging Face
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates libgomp1 python3 \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10200 multitts \
    && useradd --system --uid 10200 --gid multitts --home-dir /data --no-create-home multitts \
    && mkdir -p /data \
    && chown multitts:multitts /data

COPY --from=builder /app /app

LABEL org.opencontainers.image.title="wyoming-multitts" \
      org.opencontainers.image.description="Wyoming text-to-speech server for Home Assistant: Orpheus, OuteTTS and more behind one endpoint" \
      org.opencontainers.image.licenses="MIT"

# HOME=/data: caches (Hugging Face's, torch's) land in the volume, also under `docker run --user`.
# WYOMING_MULTITTS_ARGS: flags added after the command line's (README, "Command line").
ENV HOME=/data \
    PYTHONUNBUFFERED=1 \
    WYOMING_MULTITTS_ARGS=""

USER 10200:10200
WORKDIR /data
VOLUME /data
EXPOSE 10200

# A real describe/info round trip. Models load on first use, not at startup, but the first start
# on a small board can be slow; a success ends the start period early.
HEALTHCHECK --start-period=10m --interval=1m --timeout=30s --retries=3 \
    CMD ["/app/.venv/bin/python", "-m", "wyoming_multitts.health_check", "--uri", "tcp://127.0.0.1:10200"]

# script/run execs `.venv/bin/python -m wyoming_multitts`, so the server is PID 1 and gets Docker's
# SIGTERM. Arguments of `docker run IMAGE ...` follow these defaults and override them.
ENTRYPOINT ["/app/script/run", "--uri", "tcp://0.0.0.0:10200", "--data-dir", "/data"]
CMD []

# wyoming-multitts as a container (README, "Installation"): amd64 and arm64.
#
#   docker build -t wyoming-multitts .                                    # CPU (default)
#   docker build --build-arg ACCEL=vulkan -t wyoming-multitts:vulkan .    # Vulkan GPU
#   docker build --build-arg ACCEL=cuda \                                 # NVIDIA GPU, amd64
#       --build-arg BUILD_BASE=nvidia/cuda:12.8.1-devel-ubuntu24.04 \
#       --build-arg RUNTIME_BASE=nvidia/cuda:12.8.1-runtime-ubuntu24.04 -t wyoming-multitts:cuda .
#   docker run -d -p 10200:10200 -v multitts-data:/data wyoming-multitts [FLAGS]
#
# Both architectures in one command, on an x86-64 machine (docs/arm64.md):
#   podman build --format docker --platform linux/amd64,linux/arm64 --manifest wyoming-multitts .
# llama.cpp is compiled in a stage that runs on the build machine (`--platform=$BUILDPLATFORM`),
# natively or with Debian's cross compiler; the stage that installs torch, that wheel and the
# server runs on the target's platform (emulated by qemu-user for arm64) and compiles nothing.
#
# It needs BuildKit (`docker build`, `docker buildx`), podman or buildah, which set BUILDPLATFORM,
# TARGETPLATFORM and TARGETARCH; `podman build --format docker` and `buildah bud --format docker`
# keep the HEALTHCHECK (the OCI format has no HEALTHCHECK or SHELL). Podman 4.3 (Debian 12) sets
# BUILDPLATFORM but does not put it into a FROM line: give it, --build-arg
# BUILDPLATFORM=linux/amd64, as script/test-image does. The later stages name
# `--platform=${TARGETPLATFORM}` because that podman otherwise keeps the llama stage's platform.
# ACCEL picks llama.cpp's CMake flags, the torch build and the extra system packages
# (docker/install-server); a CUDA build needs CUDA base images, as above, and ACCEL=cuda or vulkan
# is built on a machine of the target's architecture (not cross-compiled).
# More CMake flags: --build-arg CMAKE_ARGS="-DGGML_NATIVE=ON" (faster, but only on CPUs like the
# build machine's), or e.g. "-DCMAKE_CUDA_ARCHITECTURES=89" to compile CUDA for one GPU only.
# Another CUDA: other nvidia/cuda base images and --build-arg TORCH_INDEX_URL=https://download.pytorch.org/whl/cu126
#
# The builder installs the server into /app/.venv; the runtime image gets /app (the source and
# .venv, as script/setup lays them out) without compilers. The server runs as user multitts
# (uid 10200) with the models and your catalog in the volume /data.

# Lint: hadolint (tests/test_deploy.py). Its DL3008 (pin apt package versions) is ignored: Debian
# replaces a version with each security update, and a pinned build then fails. DL3006 (tag every
# image) is ignored where FROM names an ARG (its default is tagged), DL3029 (no --platform in
# FROM) and DL3065 (TARGETPLATFORM is the default) where a stage names its platform on purpose
# (podman 4.3, above).

ARG BUILD_BASE=debian:trixie-slim
ARG RUNTIME_BASE=debian:trixie-slim

# ---- llama: llama-cpp-python's wheel, compiled on the build machine for the target's CPU

# hadolint ignore=DL3006,DL3029
FROM --platform=${BUILDPLATFORM} ${BUILD_BASE} AS llama
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ARG ACCEL=cpu
ARG TARGETARCH
WORKDIR /app
COPY docker/install-server docker/
COPY script/llama-cpp-flags script/
RUN ACCEL="${ACCEL}" TARGETARCH="${TARGETARCH}" docker/install-server build-packages

# The image may run on another CPU than the build machine's: no -march=native. With ACCEL=cpu
# ggml's CPU backend is built once per CPU generation of the target's architecture (x86: plain
# x86-64 to AVX-512 with BF16; arm64: Armv8.0 to SVE2 and SME), and the best for the CPU it runs
# on is loaded when the server starts (docs/cpus.md, docs/arm64.md); for ACCEL=cuda or vulkan it
# compiles for one baseline. For one build for the build machine's CPU only:
# --build-arg CPU_VARIANTS= --build-arg CMAKE_ARGS=-DGGML_NATIVE=ON.
ARG LLAMA_CPP_VERSION=0.3.36
ARG CMAKE_ARGS=""
ARG CPU_VARIANTS=all
RUN ACCEL="${ACCEL}" TARGETARCH="${TARGETARCH}" CPU_VARIANTS="${CPU_VARIANTS}" \
    LLAMA_CPP_VERSION="${LLAMA_CPP_VERSION}" CMAKE_ARGS="-DGGML_NATIVE=OFF ${CMAKE_ARGS}" \
    docker/install-server llama-wheel /wheels

# ---- builder: torch, that wheel and the server into /app/.venv, on the target's platform

# hadolint ignore=DL3006,DL3029,DL3065
FROM --platform=${TARGETPLATFORM} ${RUNTIME_BASE} AS builder
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ARG ACCEL=cpu
WORKDIR /app
COPY docker/install-server docker/
COPY script/llama-cpp-flags script/
RUN docker/install-server venv-packages

ARG TORCH_VERSION=2.13.0
ARG TORCH_ARM64_VERSION=""
ARG TORCH_INDEX_URL=""
RUN ACCEL="${ACCEL}" TORCH_VERSION="${TORCH_VERSION}" TORCH_ARM64_VERSION="${TORCH_ARM64_VERSION}" \
    TORCH_INDEX_URL="${TORCH_INDEX_URL}" docker/install-server venv

COPY --from=llama /wheels /wheels
RUN docker/install-server llama-cpp /wheels

ARG LLAMA_CPP_VERSION=0.3.36
COPY pyproject.toml README.md ./
RUN LLAMA_CPP_VERSION="${LLAMA_CPP_VERSION}" docker/install-server requirements

COPY wyoming_multitts/ wyoming_multitts/
COPY data/ data/
COPY script/run script/
RUN docker/install-server package

# ---- runtime

# hadolint ignore=DL3006,DL3029,DL3065
FROM --platform=${TARGETPLATFORM} ${RUNTIME_BASE}
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ARG ACCEL=cpu
COPY docker/install-server /usr/local/lib/wyoming-multitts/install-server
# libgomp1: llama.cpp's OpenMP threads; ca-certificates: model downloads from Hugging Face
RUN ACCEL="${ACCEL}" /usr/local/lib/wyoming-multitts/install-server runtime-packages \
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

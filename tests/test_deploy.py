"""The container image and the Home Assistant add-on, checked without Docker: what the image runs
is what `script/run` runs, every add-on option becomes a flag the server knows, port 10200 agrees
everywhere, the health check works against a live server, and the Dockerfiles pass hadolint.

Nothing is built here: the Dockerfiles and scripts are parsed, and the scripts are run with
stand-ins for what only exists in an image (the venv's python, bashio). `script/test-image` builds
both images and runs them for real (minutes; README, "Testing the images").
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path, PurePath
from typing import Callable, Iterator
from urllib.parse import urlparse

import pytest
import yaml
from wyoming.event import read_event, write_event
from wyoming.info import Info

from wyoming_multitts import __main__ as server_main
from wyoming_multitts import health_check
from wyoming_multitts.__main__ import build_parser

from .conftest import RunningServer, free_port, missing_prerequisite

ROOT = Path(__file__).resolve().parent.parent
DOCKERFILE = ROOT / "Dockerfile"
ADDON = ROOT / "homeassistant-addon"
S6 = ADDON / "rootfs" / "etc" / "s6-overlay" / "s6-rc.d"
RUN_SCRIPT = S6 / "multitts" / "run"
PORT = 10200
APP_DIR = "/app"
"""Where the image keeps the source and its .venv, laid out as script/setup does."""
QUICK = 10.0
"""Seconds a failing health check may take, Python's start included (2 shared cores)."""

OPTION_SAMPLES: dict[str, tuple[object, str, object]] = {
    # option: (a value that is not the default, argparse dest, what the server then gets)
    "voice": ("orpheus-leo", "voice", "orpheus-leo"),
    "voices_file": (
        "/share/multitts/my voices.yaml",
        "voices",
        Path("/share/multitts/my voices.yaml"),
    ),
    "device": ("cpu", "device", "cpu"),
    "threads": (3, "threads", 3),
    "max_loaded_memory": ("6G", "max_loaded_bytes", 6 * 10**9),
    "unload_after": (600, "unload_after", 600.0),
    "zeroconf": (True, "zeroconf", server_main.ZEROCONF_DEFAULT_NAME),
    "streaming": (False, "no_streaming", True),
    "offline": (True, "offline", True),
    "debug_logging": (True, "debug", True),
    "min_free_disk": (10, "min_free_disk", 10.0),
    "max_model_disk": (40, "max_model_disk", 40.0),
    "load_timeout": (1800, "load_timeout", 1800.0),
}
"""Every add-on option: a new one must be added here, so its flag is tested too."""
ADDON_OWN_DEFAULTS = {"min_free_disk": 5.0}
"""Where the add-on's default is not the server's, on purpose: its models share the disk of
Home Assistant's configuration and database."""


# ---- parsing Dockerfiles and the add-on


def instructions(dockerfile: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order, continuation lines joined, comments dropped."""
    lines = [
        line for line in dockerfile.read_text().splitlines() if not line.lstrip().startswith("#")
    ]
    joined = re.sub(r"\\\n\s*", " ", "\n".join(lines))
    result = []
    for line in joined.splitlines():
        if line.strip():
            keyword, _, rest = line.strip().partition(" ")
            result.append((keyword.upper(), rest.strip()))
    return result


def final_stage(dockerfile: Path) -> list[tuple[str, str]]:
    """The instructions of the last stage (the image `docker build` makes)."""
    steps = instructions(dockerfile)
    last_from = max(i for i, (keyword, _) in enumerate(steps) if keyword == "FROM")
    return steps[last_from:]


def only(steps: list[tuple[str, str]], keyword: str) -> str:
    """The arguments of the one `keyword` instruction among `steps`."""
    found = [rest for kw, rest in steps if kw == keyword]
    assert len(found) == 1, f"expected one {keyword}, found {found}"
    return found[0]


def exec_form(arguments: str) -> list[str]:
    """`["a", "b"]` of ENTRYPOINT/CMD; the shell form would not exec (and not be PID 1)."""
    value = json.loads(arguments)
    assert isinstance(value, list) and all(isinstance(v, str) for v in value), arguments
    return value


def healthcheck_command(dockerfile: Path) -> tuple[str, list[str]]:
    """(options, exec-form command) of the final stage's HEALTHCHECK."""
    options, _, command = only(final_stage(dockerfile), "HEALTHCHECK").partition("CMD ")
    return options, exec_form(command)


def flag_value(argv: list[str], flag: str) -> str:
    """The value after `flag` in `argv`."""
    return argv[argv.index(flag) + 1]


def first_group(pattern: str, text: str) -> str:
    """Group 1 of the first match of `pattern` (multi-line) in `text`."""
    match = re.search(pattern, text, re.M)
    assert match, pattern
    return match.group(1)


def addon_config() -> dict:
    return yaml.safe_load((ADDON / "config.yaml").read_text())


def run_script_mapping() -> list[tuple[str, str, str]]:
    """(helper, option, flag) of each `option_value|option_true|option_false OPTION FLAG` line."""
    pattern = re.compile(r"^(option_value|option_true|option_false) (\w+) (--[\w-]+)$", re.M)
    return pattern.findall(RUN_SCRIPT.read_text())


def run_addon_script(options: dict[str, object], tmp_path: Path) -> list[str]:
    """Run the s6 run script with `options` as the add-on's; the argv it would exec.

    bashio is replaced by functions that behave like bashio's (`bashio::config` prints `null`
    for a missing option), and `exec` by one that records its arguments.
    """

    def text(value: object) -> str:
        return ("true" if value else "false") if isinstance(value, bool) else str(value)

    entries = " ".join(f"[{key}]={shlex.quote(text(value))}" for key, value in options.items())
    record = tmp_path / "argv"
    stubs = f"""
declare -A OPTIONS=({entries})
bashio::config() {{
    if [[ -v "OPTIONS[$1]" ]]; then printf '%s' "${{OPTIONS[$1]}}"; else printf null; fi
}}
bashio::config.has_value() {{ local v; v=$(bashio::config "$1"); [[ "$v" != null && -n "$v" ]]; }}
bashio::config.true() {{ [[ $(bashio::config "$1") == true ]]; }}
bashio::config.false() {{ [[ $(bashio::config "$1") == false ]]; }}
bashio::log.info() {{ :; }}
exec() {{ printf '%s\\0' "$@" > {shlex.quote(str(record))}; }}
source {shlex.quote(str(RUN_SCRIPT))}
"""
    subprocess.run(["bash", "-c", stubs], check=True, timeout=QUICK)
    return record.read_text().split("\0")[:-1]


def dockerignore_allows(path: str) -> bool:
    """Whether .dockerignore lets `path` into the build context (Docker's rules: patterns in
    order, the last match wins, `!` re-includes, a pattern that matches a parent matches all
    below it)."""
    allowed = True
    for line in (ROOT / ".dockerignore").read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        negate, pattern = line.startswith("!"), line.lstrip("!")
        regex = re.escape(pattern).replace(r"\*\*/", "(.*/)?").replace(r"\*", "[^/]*")
        parts = path.split("/")
        prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        if any(re.fullmatch(regex, prefix) for prefix in prefixes):
            allowed = negate
    return allowed


# ---- the image runs what script/run runs


def test_image_entrypoint_is_script_run_with_the_image_defaults() -> None:
    steps = final_stage(DOCKERFILE)
    entry = exec_form(only(steps, "ENTRYPOINT"))
    assert entry == [
        f"{APP_DIR}/script/run",
        "--uri",
        f"tcp://0.0.0.0:{PORT}",
        "--data-dir",
        "/data",
    ]
    assert exec_form(only(steps, "CMD")) == []
    # the builder lays out /app as script/setup does (script/run finds ../.venv), the runtime
    # stage takes all of it
    builder = instructions(DOCKERFILE)
    assert ("WORKDIR", APP_DIR) in builder
    assert ("COPY", "script/run script/") in builder
    assert ("COPY", f"--from=builder {APP_DIR} {APP_DIR}") in steps
    assert "/data" in only(steps, "VOLUME")
    user = only(steps, "USER")
    assert re.fullmatch(r"[1-9]\d*:[1-9]\d*", user), f"USER {user}: numeric and not root"

    args = build_parser().parse_args(entry[1:])
    assert args.uri == server_main.DEFAULT_URI and args.data_dir == [Path("/data")]


def test_script_run_execs_the_venv_python_with_all_arguments(tmp_path: Path) -> None:
    """script/run as the image's entrypoint: `.venv/bin/python -m wyoming_multitts` replaces the
    script's process (in a container: PID 1, which gets Docker's SIGTERM) and gets every argument.
    """
    entry = exec_form(only(final_stage(DOCKERFILE), "ENTRYPOINT"))
    app = tmp_path / "app"
    (app / "script").mkdir(parents=True)
    shutil.copy2(ROOT / "script" / "run", app / "script" / "run")
    python = app / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text('#!/bin/sh\necho "$$"\nprintf "%s\\n" "$@"\n')
    python.chmod(0o755)

    user_args = ["--voice", "orpheus-leo", "--uri", "tcp://0.0.0.0:10300"]
    process = subprocess.Popen(
        [str(app / "script" / "run"), *entry[1:], *user_args], stdout=subprocess.PIPE, text=True
    )
    output, _ = process.communicate(timeout=QUICK)
    pid, *argv = output.splitlines()
    assert process.returncode == 0
    assert int(pid) == process.pid, "script/run must exec python, not run it as a child"
    assert argv == ["-m", "wyoming_multitts", *entry[1:], *user_args]
    # `docker run IMAGE --uri ...` overrides the image's default (argparse: the last one wins)
    assert build_parser().parse_args(argv[2:]).uri == "tcp://0.0.0.0:10300"


def test_flags_also_come_from_the_environment_variable_the_image_declares() -> None:
    env = dict(re.findall(r"(\w+)=(\"[^\"]*\"|\S+)", only(final_stage(DOCKERFILE), "ENV")))
    assert server_main.ARGS_ENV in env


def test_healthcheck_runs_the_health_check_module_with_a_long_start_period() -> None:
    for dockerfile in (DOCKERFILE, ADDON / "Dockerfile"):
        options, command = healthcheck_command(dockerfile)
        assert command[:3] == [f"{APP_DIR}/.venv/bin/python", "-m", "wyoming_multitts.health_check"]
        start = re.search(r"--start-period=(\d+)m", options)
        assert start and int(start.group(1)) >= 5, f"{dockerfile}: {options}"


# ---- the add-on


def test_every_addon_option_maps_to_a_flag_of_the_server(tmp_path: Path) -> None:
    config = addon_config()
    schema = set(config["schema"])
    assert set(config["options"]) <= schema
    assert set(OPTION_SAMPLES) == schema, "add the new option to OPTION_SAMPLES"
    translations = yaml.safe_load((ADDON / "translations" / "en.yaml").read_text())
    assert set(translations["configuration"]) == schema

    mapping = run_script_mapping()
    assert sorted(option for _, option, _ in mapping) == sorted(schema)
    parser = build_parser()
    flags = {flag: action for action in parser._actions for flag in action.option_strings}
    for helper, option, flag in mapping:
        assert flag in flags, f"{option}: the server has no {flag}"
        nargs = flags[flag].nargs  # 0: a switch; "?": switch or value (--zeroconf [NAME])
        usable = nargs != 0 if helper == "option_value" else nargs in (0, "?")
        assert usable, f"{option}: {helper} cannot use {flag} (nargs={nargs})"

    # the add-on's defaults give the server's defaults
    defaults = parser.parse_args(run_addon_script(config["options"], tmp_path)[1:])
    for option, (_, dest, _) in OPTION_SAMPLES.items():
        expected = ADDON_OWN_DEFAULTS.get(option, parser.get_default(dest))
        assert getattr(defaults, dest) == expected, dest

    # each option, set, reaches the server
    chosen = {option: value for option, (value, _, _) in OPTION_SAMPLES.items()}
    argv = run_addon_script(chosen, tmp_path)
    assert argv[0] == f"{APP_DIR}/script/run"
    args = parser.parse_args(argv[1:])
    for option, (_, dest, expected) in OPTION_SAMPLES.items():
        assert getattr(args, dest) == expected, option
    assert args.data_dir == [Path("/share/multitts")]
    assert args.download_dir == Path("/data/huggingface")


def test_addon_config_announces_itself_and_keeps_models_out_of_backups() -> None:
    config = addon_config()
    assert config["discovery"] == ["wyoming"]
    assert config["init"] is False
    assert set(config["arch"]) == {"amd64", "aarch64"}
    assert set(yaml.safe_load((ADDON / "build.yaml").read_text())["build_from"]) == set(
        config["arch"]
    )

    def backed_up(path: str) -> bool:
        """The Supervisor skips a file or folder whose path matches a pattern (PurePath.match),
        and everything in a skipped folder."""
        parts = PurePath(path).parts
        prefixes = [PurePath(*parts[: i + 1]) for i in range(len(parts))]
        return not any(p.match(pattern) for p in prefixes for pattern in config["backup_exclude"])

    model = "huggingface/models--isaiahbjork--orpheus-3b-0.1-ft-Q4_K_M-GGUF"
    assert not backed_up(f"{model}/blobs/0123abcd")
    assert not backed_up(f"{model}/snapshots/main/orpheus-3b-0.1-ft-q4_k_m.gguf")
    assert not backed_up(".cache/huggingface/xet/chunk")
    assert not backed_up("my-model.gguf")
    assert backed_up("voices.yaml")


def test_discovery_tells_home_assistant_the_wyoming_uri() -> None:
    script = (S6 / "discovery" / "run").read_text()
    assert re.search(r'bashio::discovery "wyoming"', script)
    assert re.search(rf'uri "tcp://\$\(hostname\):{PORT}"', script)
    assert (S6 / "discovery" / "dependencies.d" / "multitts").exists()
    for service in ("multitts", "discovery"):
        assert (S6 / "user" / "contents.d" / service).exists()


def test_addon_and_image_build_the_versions_script_setup_installs() -> None:
    setup = (ROOT / "script" / "setup").read_text()
    torch = first_group(r'^TORCH_VERSION="([^"]+)"', setup)
    pyproject = (ROOT / "pyproject.toml").read_text()
    version = first_group(r'^version = "([^"]+)"', pyproject)
    llama = first_group(r'"llama-cpp-python==([^"]+)"', pyproject)
    args = dict(re.findall(r"^ARG (\w+)=(\S*)$", DOCKERFILE.read_text(), re.M))
    build_args = yaml.safe_load((ADDON / "build.yaml").read_text())["args"]
    assert args["TORCH_VERSION"] == build_args["TORCH_VERSION"] == torch
    assert args["LLAMA_CPP_VERSION"] == build_args["LLAMA_CPP_VERSION"] == llama
    assert addon_config()["version"] == version
    assert f"## {version}" in (ADDON / "CHANGELOG.md").read_text()


# ---- build contexts


def test_dockerignore_lets_in_what_the_dockerfile_copies_and_nothing_else() -> None:
    sources = []
    for keyword, rest in instructions(DOCKERFILE):
        if keyword == "COPY" and not rest.startswith("--from"):
            sources += rest.split()[:-1]
    assert sources
    for source in sources:
        assert dockerignore_allows(source.rstrip("/")), source
    for inside in (
        "wyoming_multitts/__main__.py",
        "data/voices.yaml",
        "data/outetts/v0.3/en_male_1.json",
    ):
        assert dockerignore_allows(inside), inside
    for outside in (
        ".venv/bin/python",
        "local/models/x.gguf",
        "tests/test_deploy.py",
        "script/setup",
        "wyoming_multitts/__pycache__/handler.cpython-311.pyc",
        ".git/HEAD",
    ):
        assert not dockerignore_allows(outside), outside


def test_make_addon_writes_a_complete_build_context(tmp_path: Path) -> None:
    dest = tmp_path / "addons" / "multitts"
    subprocess.run(
        [str(ROOT / "docker" / "make-addon"), str(dest)],
        check=True,
        capture_output=True,
        timeout=60,
    )
    assert (dest / "config.yaml").read_text() == (ADDON / "config.yaml").read_text()
    assert (
        dest / "rootfs" / "etc" / "s6-overlay" / "s6-rc.d" / "multitts" / "run"
    ).stat().st_mode & 0o111
    for keyword, rest in instructions(dest / "Dockerfile"):
        if keyword == "COPY" and not rest.startswith("--from"):
            for source in rest.split()[:-1]:
                assert (dest / source).exists(), source
    # src/ holds what the main image copies, laid out the same way
    for keyword, rest in instructions(DOCKERFILE):
        if keyword == "COPY" and not rest.startswith("--from"):
            for source in rest.split()[:-1]:
                assert (dest / "src" / source).exists(), source
    assert (dest / "src" / "data" / "voices.yaml").is_file()
    assert not list((dest / "src").rglob("__pycache__"))


# ---- port 10200 everywhere


def test_port_10200_agrees_everywhere(tmp_path: Path) -> None:
    def port(uri: str) -> int | None:
        return urlparse(uri).port

    steps = final_stage(DOCKERFILE)
    ports = {
        "Dockerfile EXPOSE": int(only(steps, "EXPOSE")),
        "Dockerfile ENTRYPOINT": port(flag_value(exec_form(only(steps, "ENTRYPOINT")), "--uri")),
        "Dockerfile HEALTHCHECK": port(flag_value(healthcheck_command(DOCKERFILE)[1], "--uri")),
        "add-on HEALTHCHECK": port(
            flag_value(healthcheck_command(ADDON / "Dockerfile")[1], "--uri")
        ),
        "add-on run script": port(flag_value(run_addon_script({}, tmp_path), "--uri")),
        "__main__.DEFAULT_URI": port(server_main.DEFAULT_URI),
        "health_check.DEFAULT_URI": port(health_check.DEFAULT_URI),
    }
    config = addon_config()
    ports |= {f"add-on config.yaml {key}": int(key.split("/")[0]) for key in config["ports"]}
    translations = yaml.safe_load((ADDON / "translations" / "en.yaml").read_text())
    ports |= {
        f"add-on translation {key}": int(key.split("/")[0]) for key in translations["network"]
    }
    discovery = (S6 / "discovery" / "run").read_text()
    found = re.findall(r"tcp://[^\s:\"]+:(\d+)", discovery)
    ports |= {f"discovery uri {i}": int(m) for i, m in enumerate(found)}
    assert len(found) == 2 and len(ports) == 11, ports
    assert {name: value for name, value in ports.items() if value != PORT} == {}


# ---- the health check, for real


def run_health_check(*args: str) -> tuple[int, str, float]:
    """(exit status, stdout, seconds) of `python -m wyoming_multitts.health_check ARGS`."""
    start = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "wyoming_multitts.health_check", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return result.returncode, result.stdout, time.monotonic() - start


def test_health_check_passes_against_a_live_server(server: RunningServer) -> None:
    status, output, _ = run_health_check("--uri", f"tcp://127.0.0.1:{server.port}")
    assert status == 0, output
    assert re.fullmatch(
        rf"healthy: tcp://127\.0\.0\.1:{server.port}: \S+ \S+, [1-9]\d* voices\n", output
    )


def test_health_check_fails_quickly_on_a_closed_port() -> None:
    status, output, seconds = run_health_check("--uri", f"tcp://127.0.0.1:{free_port()}")
    assert status == 1
    assert (
        output.startswith("unhealthy: ") and output.count("\n") == 1 and "cannot connect" in output
    )
    assert seconds < QUICK


StartFake = Callable[[Callable[[socket.socket], None]], int]


@pytest.fixture
def fake_server() -> Iterator[StartFake]:
    """Start a TCP server that answers each connection with `reply(connection)`; its port."""
    sockets: list[socket.socket] = []

    def start(reply: Callable[[socket.socket], None]) -> int:
        listener = socket.create_server(("127.0.0.1", 0))
        sockets.append(listener)

        def serve() -> None:
            with listener:
                try:
                    connection, _ = listener.accept()
                except OSError:
                    return
                sockets.append(connection)
                reply(connection)

        threading.Thread(target=serve, daemon=True).start()
        return int(listener.getsockname()[1])

    yield start
    for sock in sockets:
        sock.close()


def test_health_check_fails_on_a_server_that_does_not_answer(fake_server: StartFake) -> None:
    port = fake_server(lambda connection: None)  # accepts, reads nothing, says nothing
    status, output, seconds = run_health_check("--uri", f"tcp://127.0.0.1:{port}", "--timeout", "1")
    assert (status, output) == (1, f"unhealthy: tcp://127.0.0.1:{port}: no info within 1 s\n")
    assert seconds < QUICK


def test_health_check_fails_on_an_info_without_tts(fake_server: StartFake) -> None:
    def answer_info_without_tts(connection: socket.socket) -> None:
        with connection.makefile("rb") as reader, connection.makefile("wb") as writer:
            event = read_event(reader)
            assert event is not None and event.type == "describe"
            write_event(Info().event(), writer)

    port = fake_server(answer_info_without_tts)
    status, output, _ = run_health_check("--uri", f"tcp://127.0.0.1:{port}")
    assert (status, output) == (
        1,
        f"unhealthy: tcp://127.0.0.1:{port}: its info has no tts program\n",
    )


def test_health_check_loads_neither_numpy_torch_nor_llama_cpp() -> None:
    code = (
        "import sys, wyoming_multitts.health_check; "
        "print(sorted(m for m in ('numpy', 'torch', 'llama_cpp') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


# ---- linters


def linter(name: str) -> str:
    """Path of a linter the dev dependencies install into .venv; skips the test if it can't run."""
    path = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if path is None:
        missing_prerequisite(
            f"{name} is not installed (pip install -e '.[dev]'; no wheel for this platform)"
        )
    try:
        subprocess.run([path, "--version"], capture_output=True, check=True, timeout=QUICK)
    except (OSError, subprocess.SubprocessError) as err:
        missing_prerequisite(f"{name} cannot run here: {err}")
    return path


def test_dockerfiles_pass_hadolint() -> None:
    hadolint = linter("hadolint")
    result = subprocess.run(
        [hadolint, "--no-color", str(DOCKERFILE), str(ADDON / "Dockerfile")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("dockerfile", [DOCKERFILE, ADDON / "Dockerfile"])
def test_dockerfiles_build_without_buildkit(dockerfile: Path) -> None:
    """podman, buildah and Docker's legacy builder resolve an ARG as a whole image name, but not
    a stage name built from ARGs (`FROM build-${ACCEL}`): only BuildKit does that."""
    steps = instructions(dockerfile)
    stages = {rest.split()[-1] for kw, rest in steps if kw == "FROM" and " AS " in rest.upper()}
    arg_defaults = dict(rest.partition("=")[::2] for kw, rest in steps if kw == "ARG")
    froms = [
        [word for word in rest.split() if not word.startswith("--")]
        for kw, rest in steps
        if kw == "FROM"
    ]
    for image in (words[0] for words in froms):
        whole_arg = re.fullmatch(r"\$\{(\w+)\}", image)
        if whole_arg:  # an image name from an ARG: fine unless it names a stage
            assert arg_defaults.get(whole_arg[1]) not in stages, f"{image} defaults to a stage"
            continue
        pattern = re.sub(r"\\\$\\\{\w+\\\}", ".*", re.escape(image))
        named = [stage for stage in stages if re.fullmatch(pattern, stage)]
        assert not named, f"{dockerfile.name}: FROM {image} names stage(s) {named} through ARGs"


def test_image_compiles_on_the_build_machine_and_installs_on_the_target() -> None:
    """llama.cpp is compiled in a stage on the build machine's platform (natively or cross, for
    TARGETARCH), so that an arm64 image built on x86 runs no compiler under emulation; the stage
    that makes /app/.venv runs on the target's platform and only installs that wheel."""
    steps = instructions(DOCKERFILE)
    starts = [i for i, (keyword, _) in enumerate(steps) if keyword == "FROM"]
    stages = {
        steps[start][1].split()[-1]: steps[start:end]
        for start, end in zip(starts, starts[1:] + [len(steps)])
        if " AS " in steps[start][1].upper()
    }
    llama, builder = stages["llama"], stages["builder"]
    assert llama[0][1].startswith("--platform=${BUILDPLATFORM} ")
    assert builder[0][1].startswith("--platform=${TARGETPLATFORM} ")
    llama_runs = " ".join(rest for kw, rest in llama if kw == "RUN")
    builder_runs = " ".join(rest for kw, rest in builder if kw == "RUN")
    assert "install-server build-packages" in llama_runs
    assert 'TARGETARCH="${TARGETARCH}"' in llama_runs and "llama-wheel /wheels" in llama_runs
    assert "build-packages" not in builder_runs and "llama-wheel" not in builder_runs
    assert ("COPY", "--from=llama /wheels /wheels") in builder
    assert "install-server llama-cpp /wheels" in builder_runs


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_llama_cpp_flags_follow_the_target_not_the_build_machine(machine: str) -> None:
    """The AMX guard is for x86 targets only, whichever machine compiles (docs/cpus.md)."""
    flags = subprocess.run(
        [str(ROOT / "script" / "llama-cpp-flags"), machine],
        capture_output=True,
        text=True,
        check=True,
        timeout=QUICK,
    ).stdout
    assert ("-mno-amx-int8" in flags) == (machine == "x86_64")


def test_deploy_scripts_pass_shellcheck() -> None:
    shellcheck = linter("shellcheck")
    scripts = [
        ROOT / "docker" / "install-server",
        ROOT / "docker" / "make-addon",
        ROOT / "script" / "run",
        ROOT / "script" / "test-image",
        ROOT / "script" / "build-arm64",
        ROOT / "script" / "test-arm64",
        ROOT / "script" / "arm64-emulation",
        ROOT / "script" / "gpu-carry",
        ROOT / "script" / "gpu-check",
    ]
    scripts += [S6 / "multitts" / "run", S6 / "multitts" / "finish", S6 / "discovery" / "run"]
    result = subprocess.run(
        [shellcheck, *map(str, scripts)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr

"""The arrows between the parts (docs/architecture.md): every import of the package and of tools/
is parsed and checked against the forbidden directions, and the server's front end loads neither
torch nor llama.cpp (`describe` is served and a catalog without those engines costs nothing)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "wyoming_multitts"

WEB_MODULES = {"web": ("__main__",), "web_settings": ("__main__", "web")}
"""The web page, a face beside the handler: only these may import it (nothing below knows it)."""
PROTOCOL_MODULES = ("handler", "info", "server", "health_check")
"""The only modules that speak Wyoming (import the `wyoming` package)."""
SERVER_MODULES = (
    *("__main__", "handler", "speech", "registry", "process", "channel", "worker", "server"),
    *("speaker_profiles", "create_speaker", "live_catalog", "own_voices"),
    *("web", "web_settings", "model_files"),
)
"""The server side of the package: what no engine, codec or runtime module may import."""
RUNTIME_MODULES = (
    "alignment",
    "audio",
    "catalog",
    "devices",
    "errors",
    "formats",
    "hub",
    "llm",
    "loudness",
    "options",
    "sampling",
    "stats",
    "text",
    "whisper",
)
"""Shared pieces below the engines: they may not import an engine (or anything above)."""


def module_name(path: Path, root: Path) -> str:
    """`wyoming_multitts/engines/bark/engine.py` → `wyoming_multitts.engines.bark.engine`."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, root: Path) -> set[str]:
    """Every module `path` imports, relative imports made absolute (top level or in functions)."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def is_part(module: str, part: str) -> bool:
    """Whether `module` is `wyoming_multitts.<part>` or inside it."""
    full = f"{PACKAGE}.{part}"
    return module == full or module.startswith(full + ".")


def engine_of(module: str) -> str | None:
    """The engine package a module belongs to (`bark`, …); None outside one (or for `base`)."""
    parts = module.split(".")
    if len(parts) >= 3 and parts[:2] == [PACKAGE, "engines"] and parts[2] != "base":
        return parts[2]
    return None


def forbidden(importer: str, imported: str) -> str | None:
    """Why `importer` may not import `imported`; None when it may."""
    if importer.startswith("tools"):
        return None  # tooling may use anything of the package
    if imported == "tools" or imported.startswith("tools."):
        return "the server imports tooling"
    if imported.split(".")[0] == "wyoming" and not any(
        is_part(importer, part) for part in PROTOCOL_MODULES
    ):
        return "only the handler side speaks the protocol"
    if not imported.startswith(PACKAGE + "."):
        return None
    for face, importers in WEB_MODULES.items():
        if is_part(imported, face) and not any(is_part(importer, i) for i in importers):
            return "the web page is a face at the top: only __main__ starts it"
    if is_part(importer, "codecs") and is_part(imported, "engines"):
        return "a codec imports an engine"
    below_server = ("codecs", "engines", *RUNTIME_MODULES)
    if any(is_part(importer, part) for part in below_server) and any(
        is_part(imported, part) for part in SERVER_MODULES
    ):
        return "an engine, codec or runtime module imports the server side"
    if any(is_part(importer, part) for part in RUNTIME_MODULES) and is_part(imported, "engines"):
        return "a runtime module imports an engine"
    mine, theirs = engine_of(importer), engine_of(imported)
    if mine and theirs and mine != theirs:
        return "an engine imports another engine"
    return None


def violations(files: list[Path], root: Path = ROOT) -> list[str]:
    """Every forbidden import among `files`, as `importer → imported: why`."""
    found = []
    for path in files:
        importer = module_name(path, root)
        reported: list[str] = []
        for imported in sorted(imports_of(path, root)):
            reason = forbidden(importer, imported)
            if reason and not any(imported.startswith(f"{done}.") for done in reported):
                reported.append(imported)  # `from m import name` is one import of m
                found.append(f"{importer} → {imported}: {reason}")
    return found


def source_files() -> list[Path]:
    return sorted([*(ROOT / PACKAGE).rglob("*.py"), *(ROOT / "tools").rglob("*.py")])


def test_no_import_goes_a_forbidden_direction() -> None:
    assert violations(source_files()) == []


def test_the_check_catches_each_forbidden_direction(tmp_path: Path) -> None:
    """Each rule, shown failing on a file that breaks it (as it would in the package)."""
    cases = {
        "codecs/bad.py": "from ..engines.base import VoiceSettings",
        "llm.py": "from .engines.bark import engine",
        "engines/bark/bad.py": "from ..orpheus import engine",
        "engines/orpheus/bad.py": "from ...registry import ModelRegistry",
        "engines/outetts/bad.py": "from wyoming.tts import Synthesize",
        "stats.py": "import tools.bench",
        "registry.py": "from .web import WebPage",
        "web.py": "from wyoming.info import Describe",
    }
    for relative, line in cases.items():
        path = tmp_path / PACKAGE / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(line + "\n", encoding="utf-8")
    found = violations(sorted((tmp_path / PACKAGE).rglob("*.py")), tmp_path)
    importers = {line.split(" → ")[0] for line in found}
    assert importers == {module_name(ROOT / PACKAGE / relative, ROOT) for relative in cases}


def test_handler_and_main_import_neither_torch_nor_llama_cpp() -> None:
    code = (
        "import sys, wyoming_multitts.__main__, wyoming_multitts.handler, "
        "wyoming_multitts.registry, wyoming_multitts.web; "
        "print(sorted(m for m in ('torch', 'llama_cpp', 'snac') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"

"""Importing the server's front end loads neither torch nor llama.cpp: `describe` is served and a
catalog without those engines costs nothing (style.md, habit 2)."""

from __future__ import annotations

import subprocess
import sys


def test_handler_and_main_import_neither_torch_nor_llama_cpp() -> None:
    code = (
        "import sys, wyoming_multitts.__main__, wyoming_multitts.handler, "
        "wyoming_multitts.registry; "
        "print(sorted(m for m in ('torch', 'llama_cpp', 'snac') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"

"""What one spoken text piece cost: filled by the engine as it runs, logged by the worker, and
appended as a JSON line to `--stats-file` for script/benchmark (data, not log text to parse)."""

from __future__ import annotations

import dataclasses
import json
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator


@dataclass
class PieceStats:
    """Token, frame and time figures of one text piece."""

    voice: str
    """The catalog voice that spoke it."""
    prompt_tokens: int = 0
    """Prompt tokens (or rows) evaluated before the first generated one."""
    cached_tokens: int = 0
    """Prompt tokens the KV cache already held (OuteTTS's speaker profile), not evaluated."""
    tokens: int = 0
    """Tokens (or codes) generated."""
    frames: int = 0
    """Codec frames decoded to audio."""
    seconds: dict[str, float] = field(default_factory=dict)
    """Seconds per stage: `prefill`, `decode` (without the codec's time), `codec`, and an
    engine's own stages (Qwen3-TTS `talker`/`predictor`, Bark `semantic`/`coarse`/`fine`)."""
    end: str = ""
    """Why generation stopped, where the engine tells (`eos`, `max_frames`)."""

    def add(self, stage: str, seconds: float) -> None:
        """Count `seconds` more for `stage`."""
        self.seconds[stage] = self.seconds.get(stage, 0.0) + seconds

    @contextmanager
    def timing(self, stage: str, excluding: str | None = None) -> Iterator[None]:
        """Count the time spent inside the block for `stage`, less what `excluding` gained
        meanwhile (the decode loop's time without the codec calls inside it)."""
        started = time.monotonic()
        excluded_before = self.seconds.get(excluding, 0.0) if excluding else 0.0
        try:
            yield
        finally:
            excluded = (self.seconds.get(excluding, 0.0) if excluding else 0.0) - excluded_before
            self.add(stage, time.monotonic() - started - excluded)

    def log_line(self) -> str:
        """One human-readable line (the worker logs it at INFO)."""
        times = " ".join(f"{stage}_s={value:.3f}" for stage, value in self.seconds.items())
        end = f" end={self.end}" if self.end else ""
        return (
            f"stats voice={self.voice} prompt_tokens={self.prompt_tokens} "
            f"cached_tokens={self.cached_tokens} tokens={self.tokens} frames={self.frames} "
            f"{times}{end}"
        )

    def to_json(self) -> str:
        """One line of JSON, as `--stats-file` holds it."""
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, line: str) -> "PieceStats":
        """The inverse of `to_json`."""
        return cls(**json.loads(line))

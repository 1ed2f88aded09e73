"""`script/benchmark --text-front-end`: what the text front end costs.

- import: seconds to import `wyoming_multitts.text` (and its libraries) in a fresh interpreter,
  and to load py3langid's model (multilingual voices), medians of `--runs` processes;
- first sentence: a fresh interpreter's first sentence in each language (locale data, number
  tables loaded on first use);
- throughput: milliseconds per 1,000 characters of a realistic LLM answer, at once and streamed
  in chunks of a few characters as Home Assistant streams them, median of many repetitions.
Markdown on stdout.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

from wyoming_multitts.text import TextFrontEnd, TextPolicy, spoken_sentences

ANSWERS = {
    "en": (
        "## Today\n\nIt is **21 °C** and sunny in Berlin; the wind is 12 km/h. Your meeting with "
        "Dr. Smith is on 2026-12-01 at 14:30, see https://example.com/a?b=1.\n- Lights: 3 on\n"
        "- Heating: 45% at 1,250 W\n\nThe 12,000 EUR invoice is due. 🙂"
    ),
    "de": (
        "## Heute\n\nEs sind **21 °C** und sonnig in Berlin, der Wind weht mit 12 km/h. Ihr "
        "Termin mit Dr. Schmidt ist am 01.12.2026 um 14:30 Uhr, z. B. im Büro.\n- Licht: 3 an\n"
        "- Heizung: 45 % bei 1.250 W\n\nDie Rechnung über 12.000 € ist fällig. 🙂"
    ),
    "fr": (
        "## Aujourd'hui\n\nIl fait **21 °C** et beau à Paris, le vent souffle à 12 km/h. Votre "
        "rendez-vous avec M. Dupont est le 1er décembre 2026 à 14h30.\n- Lumières : 3 allumées\n"
        "- Chauffage : 45 % à 1 250 W\n\nLa facture de 12 000 € est due. 🙂"
    ),
    "zh": (
        "## 今天\n\n北京今天**21°C**，晴，风速12 km/h。您和王医生的会议在2026年12月1日14:30。\n"
        "- 灯：3盏开着\n- 暖气：45%，1250 W\n\n12000欧元的发票到期了。🙂"
    ),
}
"""A realistic answer of a conversation agent per language: Markdown, numbers, units, dates."""

STREAM_CHUNK_CHARS = 4
"""Characters per streamed chunk: about what an LLM writes per token."""
REPETITIONS = 200
"""Times each answer is normalised for one throughput figure."""


def _fresh_interpreter_seconds(code: str) -> float:
    """Seconds `code` takes in a new interpreter (it prints them itself)."""
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    return float(result.stdout.strip().splitlines()[-1])


def _grown_mib(statement: str, setup: str = "") -> str:
    """Code printing how much resident memory `statement` adds (MiB; Linux /proc)."""
    rss = "int(open('/proc/self/statm').read().split()[1]) * os.sysconf('SC_PAGE_SIZE')"
    return (
        f"import os\n{setup}\nbefore = {rss}\n{statement}\n" f"print(({rss} - before) / (1 << 20))"
    )


def _timed(statement: str, setup: str = "") -> str:
    return (
        f"import time\n{setup}\nstart = time.perf_counter()\n{statement}\n"
        "print(time.perf_counter() - start)"
    )


def _per_thousand_chars(text: str, policy: TextPolicy, chunk_chars: int | None) -> float:
    """Milliseconds per 1,000 characters, median of `REPETITIONS` runs."""
    times = []
    for _ in range(REPETITIONS):
        start = time.perf_counter()
        if chunk_chars is None:
            spoken_sentences(text, policy)
        else:
            front_end = TextFrontEnd(policy)
            for offset in range(0, len(text), chunk_chars):
                front_end.add(text[offset : offset + chunk_chars])
            front_end.finish()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000 * 1000 / len(text)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="script/benchmark --text-front-end")
    parser.add_argument("--runs", type=int, default=5, help="fresh interpreters per figure")
    args = parser.parse_args(argv)

    def median_of(code: str) -> float:
        return statistics.median(_fresh_interpreter_seconds(code) for _ in range(args.runs))

    print("| step | seconds (median) | memory, MiB |\n|---|---|---|")
    imported = "import wyoming_multitts.text", "import numpy"  # numpy: the server has it anyway
    seconds, grown = median_of(_timed(*imported)), median_of(_grown_mib(*imported))
    print(f"| import wyoming_multitts.text | {seconds:.3f} | {grown:.0f} |")
    load = "load_identifier()", "from wyoming_multitts.text.detect import load_identifier"
    seconds, grown = median_of(_timed(*load)), median_of(_grown_mib(*load))
    print(f"| load py3langid's model (multilingual voices) | {seconds:.3f} | {grown:.0f} |")
    for language, text in ANSWERS.items():
        first = _timed(
            f"spoken_sentences({text!r}, TextPolicy(({language!r},)))",
            "from wyoming_multitts.text import spoken_sentences, TextPolicy",
        )
        print(f"| first answer in {language} ({len(text)} characters) | {median_of(first):.3f} | |")
    print("\n| language | policy | at once, ms / 1,000 chars | streamed, ms / 1,000 chars |")
    print("|---|---|---|---|")
    for language, text in ANSWERS.items():
        policies = {
            "its language": TextPolicy((language,)),
            "Qwen3-TTS voice (10 languages)": TextPolicy(
                (language, *(code for code in ANSWERS if code != language), "ja", "ko"),
            ),
        }
        for name, policy in policies.items():
            spoken_sentences(text, policy)  # warm: locale data, number tables, the model
            whole = _per_thousand_chars(text, policy, None)
            streamed = _per_thousand_chars(text, policy, STREAM_CHUNK_CHARS)
            print(f"| {language} | {name} | {whole:.2f} | {streamed:.2f} |")


if __name__ == "__main__":
    main()

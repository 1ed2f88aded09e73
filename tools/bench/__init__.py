"""`script/benchmark`: how fast the server speaks, next to what llama.cpp and the codecs allow.

Three parts, each in its own process so their thread pools never meet:

* `ceiling` measures the raw ceiling: prefill and greedy decode through llama.cpp's C API
  (not our `llm` wrapper, so the figure is independent) and one first-window codec decode;
* the server (`python -m wyoming_multitts`) answers real Wyoming requests from `client`, and
  `server` reads the per-piece figures its workers write to `--stats-file`;
* `report` turns both into a Markdown table with the two goal ratios.

Modules: `models` (random models and the benchmark's catalog), `machine` (what it ran on),
`__main__` (the command line and the run order).
"""

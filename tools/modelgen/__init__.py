"""Random-weight models in the real file formats, written by us.

No real weights can be downloaded in CI or on a development box without network, so tests,
benchmarks and a quick "does the server start and speak" check use models that have the real
file layout (GGUF language models with the real vocabularies and special-token ids, codec folders
that `snac.SNAC.from_pretrained` reads) but random weights. They produce noise, not speech, yet
they exercise every code path the real ones do.

Two sizes:

* `tiny`: a few MB per engine, written in seconds; the test suite builds them into a temporary
  folder (`python -m tools.modelgen tiny DIR`, or `script/make-tiny-models DIR`).
* `full-size`: the real shapes, quantized like the published GGUFs, so speed and memory match
  the real models (`python -m tools.modelgen full-size DIR`; minutes and GBs).

Each writes the model files plus `DIR/voices.yaml`, a catalog the server reads with `--voices`.
Modules: `gguf_lm` (generic GGUF language-model writer and quantizer), `files` (atomic outputs),
one module per engine (`orpheus`), and `__main__` (the command line).
"""

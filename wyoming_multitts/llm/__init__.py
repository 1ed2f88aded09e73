"""The one wrapper around llama-cpp-python, in four parts:

- `build`: llama.cpp's start-up, its backend devices, and what this build and this CPU support;
- `model`: `LlamaModel`, a GGUF loaded on a device with one context (loading, placement,
  vocabulary, evaluation);
- `batches`: the llama.cpp batches a context evaluates;
- `token_rows`: a GGUF's embedding rows read as llama.cpp reads them.

We use llama.cpp's C API through llama-cpp-python's ctypes bindings rather than its `Llama`
class: engines need raw logits per step (they sample themselves, over a few thousand candidate
tokens), exact control of the KV cache, and no stdout/stderr redirection while the server may be
writing to stdout. Native objects are owned by an `ExitStack` and freed in reverse order.
ggml's data types (row sizes, quantizing) are in `formats/ggml.py`.
"""

"""Developer tooling beside the server, not shipped with it: random-weight models (`modelgen`)
and the benchmark and soak test (`bench`). Run through `script/make-tiny-models`,
`script/benchmark` and `script/soak`."""

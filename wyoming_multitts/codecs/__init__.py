"""Audio codecs: streaming helpers and thin wrappers over maintained codec packages (`snac`, …)."""

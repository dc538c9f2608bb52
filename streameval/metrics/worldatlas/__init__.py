"""WorldAtlas closed-loop memory suite (docs/methods.md#worldatlas-memory_loop-metrics): pure
kernels over pose tracks and depth."""

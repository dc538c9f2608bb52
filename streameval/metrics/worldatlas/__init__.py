"""WorldAtlas closed-loop memory suite (seeds 001–004): pure kernels over pose tracks and depth."""

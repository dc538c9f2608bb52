"""The bridge: a model adapter run in its own Python environment (``attach --python``)."""

"""The dashboard's widgets, one module each; every one is fed plain data and never reads the
pipeline itself."""

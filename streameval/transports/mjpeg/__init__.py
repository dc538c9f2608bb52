"""MJPEG over HTTP: a ``multipart/x-mixed-replace`` stream, keys sent to another URL."""

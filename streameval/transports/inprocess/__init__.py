"""Models in process: a ``python:module:factory`` model stepped on its own thread."""

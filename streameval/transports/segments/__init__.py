"""Request-response servers: one HTTP request per chunk or key segment (``transport.py``)."""

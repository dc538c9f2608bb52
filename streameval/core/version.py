"""streameval's version, named once below everything that writes it (scores.json's provenance,
``--version``): the package's ``__init__`` imports the whole API, so a module that imported
the version from there would import its own importers."""

from __future__ import annotations

__version__ = "0.1.0"

"""The published JSON Schemas (``streameval/schemas/*.schema.json``) applied to documents.

The schema files are the contract others can validate against with any tool; this module
uses the same files, so what the project checks and what it publishes cannot drift apart.
The first violation becomes one ``BadInputError`` line: where in the document, and what.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from streameval.errors import BadInputError, one_line

META_SCHEMA = "meta.schema.json"
SCORES_SCHEMA = "scores.schema.json"
_MAX_MESSAGE = 160


@functools.cache
def _validator(name: str) -> Draft202012Validator:
    text = resources.files("streameval.schemas").joinpath(name).read_text(encoding="utf-8")
    schema = json.loads(text)
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def load_schema(name: str) -> dict[str, Any]:
    """The schema document ``name`` (e.g. ``"scores.schema.json"``)."""
    schema: dict[str, Any] = _validator(name).schema
    return schema


def validate(doc: Any, name: str, source: object) -> None:
    """Raise ``BadInputError`` naming ``source`` when ``doc`` violates schema ``name``."""
    error = best_match(_validator(name).iter_errors(doc))
    if error is None:
        return
    where = ".".join(str(p) for p in error.absolute_path) or "document"
    message = one_line(error.message)
    if len(message) > _MAX_MESSAGE:
        message = message[: _MAX_MESSAGE - 1] + "…"
    raise BadInputError(source, f"{where}: {message}")

"""A profile's ``[conditioning]`` table: how a case's start (its image, caption, intrinsics)
reaches the server (docs/serve-formats.md#conditioning-a-case), read and checked against the
profile's templates. Sending it is ``profiles/conditioning.py``'s."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from streameval.transports.profiles.fields import TomlFields
from streameval.transports.profiles.templates import placeholders_in

ImageMode = Literal["none", "inline", "path", "upload"]
CaseStart = Literal["connect", "reset"]
IMAGE_PLACEHOLDER = {"inline": "image_base64", "path": "image_path", "upload": "image_path"}
"""How the image goes → the placeholder a start template must hold for it to go at all."""
CASE_IMAGE_PLACEHOLDERS = (
    "image_base64",
    "image_mime",
    "image_path",
    "image_width",
    "image_height",
)
"""Placeholders with a value only when the case has an image."""


@dataclass(frozen=True, slots=True)
class ConditioningSpec:
    """How a case's start reaches the server (docs/serve-formats.md#conditioning-a-case).

    ``image``: ``inline`` (the start template holds ``{image_base64}``), ``path`` (it holds
    ``{image_path}``, the file as the server sees it: ``--server-path LOCAL=REMOTE``),
    ``upload`` (the image is POSTed first as ``multipart/form-data`` field ``upload_field`` to
    ``upload_url``, relative to the server's URL or absolute, and the JSON answer's
    ``upload_answer`` field, a dotted path, becomes ``{image_path}``), or ``none`` (the
    server takes no image). ``start``: ``connect`` (a case is one session: a new connection
    and its ``configure``) or ``reset`` (the ``reset`` template on the same connection).
    ``required``: the server generates nothing without a start image (an attach with neither
    ``--image`` nor ``--cases`` is refused before connecting)."""

    image: ImageMode = "none"
    start: CaseStart = "connect"
    required: bool = False
    upload_url: str = ""
    upload_field: str = "file"
    upload_answer: str = "path"
    upload_timeout_s: float = 60.0

    @property
    def template(self) -> str:
        """The template that starts a case."""
        return "reset" if self.start == "reset" else "configure"


def read_conditioning(top: TomlFields) -> ConditioningSpec:
    s = top.sub("conditioning")
    spec = ConditioningSpec(
        image=s.choice("image", ("none", "inline", "path", "upload"), "none"),
        start=s.choice("start", ("connect", "reset"), "connect"),
        upload_url=s.take("upload_url", str, ""),
        upload_field=s.take("upload_field", str, "file"),
        upload_answer=s.take("upload_answer", str, "path"),
        upload_timeout_s=float(s.number("upload_timeout_s", 60.0, 0, 3600) or 60.0),
        required=bool(s.take("required", bool, False)),
    )
    if spec.required and spec.image == "none":
        raise s.fail("required", "true needs a way to send the image (image = 'none')")
    if spec.image == "upload" and not spec.upload_url:
        raise s.fail("upload_url", "missing: image = 'upload' POSTs the image there")
    if spec.upload_url and spec.image != "upload":
        raise s.fail("upload_url", f"only with image = 'upload' (image is {spec.image!r})")
    url = spec.upload_url
    if url and not (url.startswith(("http://", "https://", "/"))):
        raise s.fail("upload_url", f"{url!r}: expected /PATH (on the server's host) or http(s)://")
    if not spec.upload_field or not spec.upload_answer:
        raise s.fail("upload_field" if not spec.upload_field else "upload_answer", "empty")
    s.done()
    return spec


def check_conditioning(top: TomlFields, spec: ConditioningSpec, templates: dict[str, Any]) -> None:
    """The case start is sendable: its template exists and carries the image the way
    ``image`` says; an image placeholder with ``image = "none"`` is a profile that would
    never be sent one (a field left out, not a choice)."""
    start = spec.template
    if spec.start == "reset" and "reset" not in templates:
        raise top.fail("conditioning.start", "'reset' needs [templates.reset]")
    used = placeholders_in(templates.get(start, {}))
    if spec.image != "none":
        needed = IMAGE_PLACEHOLDER[spec.image]
        if start not in templates:
            raise top.fail(
                "conditioning.image", f"{spec.image!r} needs [templates.{start}] to send it in"
            )
        if needed not in used:
            raise top.fail(
                "conditioning.image",
                f"{spec.image!r} but templates.{start} holds no {{{needed}}}",
            )
    for name, template in templates.items():
        images = sorted(placeholders_in(template) & set(CASE_IMAGE_PLACEHOLDERS))
        if images and spec.image == "none":
            raise top.fail(
                f"templates.{name}",
                f"uses {{{images[0]}}} but [conditioning] image is 'none' "
                "(set it to 'inline', 'path' or 'upload')",
            )

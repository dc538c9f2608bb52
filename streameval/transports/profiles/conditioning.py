"""A benchmark case's start as a server profile sends it: checked up front, uploaded, rendered.

A profile's ``[conditioning]`` table (``model.ConditioningSpec``; docs/serve-formats.md
#conditioning-a-case) says how the case image goes — inline as base64, as a path the server
reads, or uploaded first — and which template starts a case. Three things happen here:

- ``check_profile_conditioning``: before anything runs, every case's start is rendered with
  that case's values (its image standing in by placeholders, nothing read): a profile that
  sends no image given cases with images, or a template that does not render for some case
  (an image placeholder on a case without one, ``{intrinsics}`` on a case without them), is
  one ``BadInputError`` naming the profile's file — never an image silently dropped half way
  through a run of hundreds of cases.
- ``prepare_case`` / ``send_start``: the case's placeholder values as the server will see
  them, then its ``configure``; with ``image = "upload"`` the image is POSTed first
  (``multipart/form-data``) and the path read from the JSON answer.
- ``CaseRefused``: the server would not take this case (the upload answered an error, or
  timed out): the episode ends incomplete with the server's own words, and the run goes on.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

from streameval.constants import DEFAULT_FPS
from streameval.errors import BadInputError, CaseRefused, TemplateError, one_line
from streameval.transports.profiles.keychannel import KeyChannel
from streameval.transports.profiles.model import SAMPLE_VALUES, ServerProfile, lookup
from streameval.transports.profiles.start_spec import CASE_IMAGE_PLACEHOLDERS
from streameval.transports.profiles.templates import encode, render

if TYPE_CHECKING:
    from streameval.cases.conditioning import Conditioning
    from streameval.cases.model import Case

MAX_ANSWER_CHARS = 300
"""Of a server's answer, this much goes into a reason (its words, not a page of HTML)."""


def case_check_values(case: Case) -> dict[str, Any]:
    """A case's placeholder values for the up-front check: the image's stand in (the files
    were read and checked by ``load_cases``), the rest as sent."""
    values: dict[str, Any] = {
        "prompt": case.prompt or "",
        "case": case.key,
        "seed": 0,
        "intrinsics": list(case.intrinsics) if case.intrinsics else None,
    }
    if case.image_path is not None:
        width, height = case.image_size or (1, 1)
        values.update(
            image_base64=SAMPLE_VALUES["image_base64"],
            image_mime=case.image_mime or "image/jpeg",
            image_path=str(case.image_path),
            image_width=width,
            image_height=height,
        )
    return values


def check_profile_conditioning(profile: ServerProfile, cases: Iterable[Case]) -> None:
    """Every case's start renders, and a profile that sends no image is not given cases
    that start from one. One ``BadInputError`` naming the profile's file; call it before
    any episode runs."""
    cases = list(cases)
    with_image = [case for case in cases if case.image_path is not None]
    if with_image and not profile.takes_images:
        raise BadInputError(
            profile.path,
            f"profile {profile.name!r} sends no image ([conditioning] image = 'none'), but "
            f"{len(with_image)} of the {len(cases)} cases start from one: add a [conditioning] "
            "table (docs/serve-formats.md#conditioning-a-case)",
        )
    keys_only = {k: v for k, v in SAMPLE_VALUES.items() if k not in CASE_IMAGE_PLACEHOLDERS}
    for case in cases:
        values = {**keys_only, **case_check_values(case)}
        for name, template in profile.templates.items():
            if name == "pose":  # its {intrinsics} is the pose camera's, not the case's
                values_here = {**values, "intrinsics": SAMPLE_VALUES["intrinsics"]}
            else:
                values_here = values
            try:
                encode(render(template, values_here), profile.keys.encoding)
            except TemplateError as exc:
                why = str(exc)
                missing = [p for p in CASE_IMAGE_PLACEHOLDERS if f"{{{p}}}" in why]
                if missing and case.image_path is None:
                    why = f"{why}: case {case.key} has no image"
                elif "{intrinsics}" in why and case.intrinsics is None:
                    why = f"{why}: case {case.key} has no intrinsics"
                raise BadInputError(
                    profile.path, f"templates.{name} does not render for case {case.key}: {why}"
                ) from None


def server_base(url: str) -> str:
    """The HTTP origin of an attach URL: ``ws://h:p/x`` → ``http://h:p/``, ``wss`` → ``https``,
    ``webrtc+http://…`` / ``mjpeg+https://…`` → ``http(s)://…``."""
    scheme = url.split("://", 1)[0]
    plain = scheme.rsplit("+", 1)[-1]
    http = {"ws": "http", "wss": "https"}.get(plain, plain)
    parts = urlsplit(url)
    return f"{http}://{parts.netloc}/"


def upload_target(profile: ServerProfile, server_url: str, values: dict[str, Any]) -> str:
    """Where the image is POSTed: the profile's ``upload_url`` (a template: ``{case}`` …),
    on the server's host when it is a path."""
    try:
        rendered = str(render(profile.conditioning.upload_url, values))
    except TemplateError as exc:
        raise BadInputError(profile.path, f"conditioning.upload_url: {exc}") from None
    return urljoin(server_base(server_url), rendered)


async def upload_image(
    session: Any,
    profile: ServerProfile,
    server_url: str,
    conditioning: Conditioning,
    values: dict[str, Any],
) -> str:
    """POST the case image (``multipart/form-data``, one field) and return the path the
    server's JSON answer names; anything else is ``CaseRefused`` with the server's words."""
    import aiohttp

    spec = profile.conditioning
    case = conditioning.case
    url = upload_target(profile, server_url, {k: v for k, v in values.items() if k != "image_path"})
    form = aiohttp.FormData()
    name = case.image_path.name if case.image_path is not None else "image"
    form.add_field(
        spec.upload_field,
        conditioning.image_bytes(),
        filename=name,
        content_type=case.image_mime or "application/octet-stream",
    )
    try:
        async with session.post(
            url, data=form, timeout=aiohttp.ClientTimeout(total=spec.upload_timeout_s)
        ) as response:
            text = await response.text(errors="replace")
            if response.status >= 400:
                words = one_line(response.reason or "") if not text.strip() else one_line(text)
                raise CaseRefused(
                    f"image upload to {url} refused: HTTP {response.status} "
                    f"{words[:MAX_ANSWER_CHARS]}"
                )
    except TimeoutError:
        raise CaseRefused(
            f"image upload to {url}: no answer within {spec.upload_timeout_s:g} s"
        ) from None
    except aiohttp.ClientError as exc:
        raise CaseRefused(f"image upload to {url} failed: {one_line(str(exc))}") from None
    try:
        answer = json.loads(text)
    except ValueError:
        raise CaseRefused(
            f"image upload to {url}: the answer is not JSON: {one_line(text)[:MAX_ANSWER_CHARS]}"
        ) from None
    path = lookup(answer, spec.upload_answer) if isinstance(answer, dict) else None
    if not isinstance(path, str) or not path:
        raise CaseRefused(
            f"image upload to {url}: the answer has no {spec.upload_answer!r}: "
            f"{one_line(text)[:MAX_ANSWER_CHARS]}"
        )
    return path


def prepare_case(channel: KeyChannel, conditioning: Conditioning | None) -> None:
    """Give ``channel`` the case's values before its templates are checked (the image read,
    not yet uploaded): a case is rendered as it will be sent."""
    if conditioning is not None:
        channel.case_values = conditioning.values()


async def send_start(
    channel: KeyChannel,
    conditioning: Conditioning | None,
    server_url: str,
    session: Any | None = None,
    *,
    kept: bool = False,
) -> None:
    """Start the session on ``channel``: upload the case image when the profile says so
    (on ``session``, or a session of its own), then send the start template with the case's
    values: ``configure`` on a new connection (``reset`` when the profile has no configure),
    ``reset`` on a connection ``kept`` from the case before (``start = "reset"``).
    ``CaseRefused`` / ``ConnectionError``: the server would not take it."""
    profile = channel.profile
    upload = profile.conditioning.image == "upload"
    if conditioning is not None and upload and conditioning.has_image:
        values = channel.case_values or conditioning.values()
        if session is not None:
            path = await upload_image(session, profile, server_url, conditioning, values)
        else:
            import aiohttp

            async with aiohttp.ClientSession() as own:
                path = await upload_image(own, profile, server_url, conditioning, values)
        channel.case_values = {**values, "image_path": path}
    await channel.start(start_template(profile, kept=kept))


def start_template(profile: ServerProfile, *, kept: bool) -> str:
    """The template that starts a session: ``reset`` on a kept connection, else
    ``configure`` (``reset`` for a ``start = "reset"`` profile that has no configure)."""
    if kept or (profile.conditioning.start == "reset" and "configure" not in profile.templates):
        return "reset"
    return "configure"


def sends_case(profile: ServerProfile | None, conditioning: Conditioning | None) -> bool:
    """A case's start goes out: there is a case, and the profile has a template that starts
    a session (``configure``, or ``reset``)."""
    if conditioning is None or profile is None:
        return False
    return profile.conditioning.template in profile.templates


class _Nowhere:
    async def send(self, payload: str | bytes) -> None:
        raise ConnectionError("not connected")


def check_templates(
    profile: ServerProfile,
    names: dict[str, str],
    keys: tuple[str, ...],
    case: Case | None = None,
) -> None:
    """Every template for every key of the episode (and ``case``'s start), rendered before
    anything connects: a key whose name has no keyCode (say) is one ``BadInputError`` naming
    the profile's file."""
    channel = KeyChannel(
        profile, names, _Nowhere(), fps=DEFAULT_FPS, episode="check", on_lost=print
    )
    if case is not None:
        channel.case_values = case_check_values(case)
    try:
        channel.check(keys)
    except TemplateError as exc:
        raise BadInputError(profile.path, str(exc)) from None

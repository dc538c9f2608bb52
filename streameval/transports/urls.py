"""``attach URL`` for network servers: which transport, which clock, which options."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

from streameval.errors import BadInputError, WireError
from streameval.protocol.public_keys import parse_key_map
from streameval.transports.base import LiveSource
from streameval.transports.live_config import Clock, LiveConfig, SourceRequest

if TYPE_CHECKING:
    from streameval.cases.conditioning import Conditioning
    from streameval.cases.model import Case
    from streameval.transports.exec.transport import ExecSource
    from streameval.transports.profiles import ServerProfile
    from streameval.transports.segments.transport import SegmentSource
    from streameval.transports.websocket.transport import KeptSocket

OUR_PROTOCOL_TAKES_NO_IMAGE = (
    "our protocol over WebRTC (--lossless) does not carry a case's image: attach the model "
    "in process (python:...), serve it over MQTT (mqtt://), or with a profile that sends "
    "the image"
)


@dataclass(frozen=True, slots=True)
class AttachOptions:
    clock: Clock | None  # None: the transport's default
    seconds_per_key: float
    fps: float | None = None
    key_map: str | None = None
    keys_url: str | None = None
    lossless: bool = False
    no_frame_timeout_s: float = 10.0
    profile: str | None = None  # a built-in name or a .toml file (``streameval profiles``)
    # with cases and a profile that sends the image as a path: (LOCAL, REMOTE) prefixes, how
    # a server on another machine sees our files (``--server-path``; ``evaluate(cases=...)``)
    server_paths: tuple[tuple[str, str], ...] = ()
    # browser+http://HOST:PORT of a Chromium the user started: the tab whose title or URL
    # contains this (``--page``)
    page: str | None = None


def url_scheme(url: str) -> str:
    """``ws`` of ``ws://…``; ``exec`` of ``exec:COMMAND`` (a program, no ``//``)."""
    return "exec" if url.startswith("exec:") else url.split("://", 1)[0]


def is_network_url(url: str) -> bool:
    return url_scheme(url) in NETWORK_SCHEMES


def default_clock(url: str, lossless: bool) -> Clock:
    """Our protocol knows which key conditioned each frame: the video clock is exact there.
    A public server plays at its own rate: keys are held for wall time."""
    scheme = url.split("://", 1)[0]
    return "video" if scheme.startswith("mqtt") or lossless else "wall"


def open_network_source(
    url: str,
    keys: tuple[str, ...],
    *,
    episode: str,
    suite: str,
    options: AttachOptions,
    conditioning: Conditioning | None = None,
    kept: KeptSocket | None = None,
    model: str | None = None,
) -> LiveSource:
    """The source for ``url``, chosen by its scheme in ``SCHEMES`` (one table); ``model``: the
    name results give it (``--model-name``), else the server's own or its host.
    ``conditioning``: the benchmark case the session starts from, sent the way the profile
    says (docs/serve-formats.md#conditioning-a-case); ``kept``: where a WebSocket whose
    profile starts cases with ``reset`` is kept from one case to the next."""
    scheme = url_scheme(url)
    if scheme not in SCHEMES:
        raise BadInputError(url, f"unsupported URL scheme {scheme!r}")
    if options.seconds_per_key <= 0:
        raise BadInputError("--seconds-per-key", f"must be > 0, got {options.seconds_per_key}")
    live = LiveConfig(
        clock=options.clock or default_clock(url, options.lossless),
        seconds_per_key=options.seconds_per_key,
        no_frame_timeout_s=options.no_frame_timeout_s,
    )
    request = _Request(url, keys, episode, suite, live, options, conditioning, kept, model)
    if not scheme.startswith("mqtt"):
        request.key_names(None)  # a bad --key-map is named before the profile is read
    source = SCHEMES[scheme](request)
    # the profile's stated cadence, from the profile the opener already read
    profile: ServerProfile | None = getattr(source, "profile", None)
    if profile is not None:
        source.response_hint_s = profile.response_s
    return source


class CaseDrive(Protocol):
    """How a case is driven (the case runner's ``CaseDrive``): its keys, how long each is held, its
    suite."""

    @property
    def keys(self) -> tuple[str, ...]: ...

    @property
    def seconds_per_key(self) -> float: ...

    @property
    def suite(self) -> str: ...


OpenForCase = Callable[["Case", CaseDrive, "Conditioning"], LiveSource]


class NetworkCaseOpener:
    """``open_for_case`` for a server: each case a session on ``url``, started from the case
    (its image, caption and intrinsics, as the profile sends them), named as the case, its
    keys held ``drive.seconds_per_key`` each. A case is a new connection, or, for a profile
    with ``[conditioning] start = "reset"``, the ``reset`` message on the connection the case
    before left open: ``aclose()`` closes that one when the run is over."""

    def __init__(self, url: str, options: AttachOptions, model: str | None = None) -> None:
        self.url = url
        self.options = options
        self.model = model
        self._kept: KeptSocket | None = None

    def __call__(self, case: Case, drive: CaseDrive, conditioning: Conditioning) -> LiveSource:
        return open_network_source(
            self.url,
            tuple(drive.keys),
            episode=case.name,
            suite=drive.suite,
            options=replace(self.options, seconds_per_key=drive.seconds_per_key),
            conditioning=conditioning,
            kept=self._kept_socket(),
            model=self.model,
        )

    def _kept_socket(self) -> KeptSocket | None:
        if self.url.split("://", 1)[0] not in ("ws", "wss"):
            return None
        if self._kept is None:
            from streameval.transports.websocket.transport import KeptSocket

            self._kept = KeptSocket()
        return self._kept

    async def aclose(self) -> None:
        if self._kept is not None:
            await self._kept.close()


def network_case_opener(
    url: str, options: AttachOptions, model: str | None = None
) -> NetworkCaseOpener:
    """The ``open_for_case`` of the server at ``url`` (``NetworkCaseOpener``); ``model``: the
    name results give it (``--model-name``)."""
    return NetworkCaseOpener(url, options, model)


def check_attach_conditioning(
    urls: Sequence[str], options: AttachOptions, cases: Iterable[Case]
) -> None:
    """Before any case runs: each server can be sent every case's start. A transport or a
    profile with no way to send an image, given cases with images, and a profile whose
    templates do not render for some case, are one ``BadInputError`` line."""
    from streameval.transports.profiles.conditioning import check_profile_conditioning

    cases = list(cases)
    images = sum(case.image_path is not None for case in cases)
    for url in urls:
        scheme = url.split("://", 1)[0]
        if scheme not in SCHEMES:
            raise BadInputError(url, f"unsupported URL scheme {scheme!r}")
        if scheme.startswith("mqtt"):
            continue  # the server's hello says whether it takes an image: checked on connect
        if options.lossless:
            if images:
                raise BadInputError(url, OUR_PROTOCOL_TAKES_NO_IMAGE)
            continue
        if scheme.startswith("browser+") and images:
            raise BadInputError(
                url,
                f"a web page is sent key events only, no start image, but {images} of the "
                f"{len(cases)} cases start from one: run its keys alone (--actions), or "
                "bring the page to the case's start yourself and attach to its tab "
                "(browser+http://HOST:PORT --page TEXT)",
            )
        profile = _profile_for(url, options)
        if profile is None:
            if images:
                raise BadInputError(
                    url,
                    f"without --profile the public style sends no image, but {images} of the "
                    f"{len(cases)} cases start from one: give a --profile that sends it "
                    "(docs/serve-formats.md#conditioning-a-case)",
                )
            continue
        check_profile_conditioning(profile, cases)
        if profile.conditioning.required and images < len(cases):
            raise BadInputError(
                url,
                f"profile {profile.name!r} needs a start image, but {len(cases) - images} of "
                f"the {len(cases)} cases have none",
            )


def refuse_without_start(urls: Sequence[str], options: AttachOptions) -> None:
    """Before anything connects: a profile whose server needs a start image (``[conditioning]
    required = true``) and an attach with neither ``--image`` nor ``--cases`` is one line."""
    for url in urls:
        if url_scheme(url) not in SCHEMES or url_scheme(url).startswith("mqtt"):
            continue
        profile = None if options.lossless else _profile_for(url, options)
        if profile is not None and profile.conditioning.required:
            raise BadInputError(
                f"--profile {options.profile}",
                "the server generates nothing without a start image: give --image PATH "
                "(one start for every episode) or --cases PATH (a benchmark's cases)",
            )


@dataclass(frozen=True, slots=True)
class _Request:
    """What every opener gets: the URL, the keys, and the attach options."""

    url: str
    keys: tuple[str, ...]
    episode: str
    suite: str
    live: LiveConfig
    options: AttachOptions
    conditioning: Conditioning | None = None
    kept: KeptSocket | None = None
    model: str | None = None

    def source(self, live: LiveConfig | None = None) -> SourceRequest:
        """What every transport's source is opened with (``live``: this style's config)."""
        config = self.live if live is None else live
        return SourceRequest(
            self.url, self.keys, self.episode, self.suite, config, self.options.fps, self.model
        )

    def key_names(self, profile: ServerProfile | None) -> dict[str, str]:
        """The server's name for each of our keys: ``--key-map`` over the profile's."""
        try:
            names = parse_key_map(self.options.key_map)
        except WireError as exc:
            raise BadInputError("--key-map", str(exc)) from None
        if profile is not None:
            from streameval.transports.profiles.conditioning import check_templates

            names = profile.key_names(_key_map_entries(self.options.key_map))
            case = self.conditioning.case if self.conditioning is not None else None
            check_templates(profile, names, self.keys, case)
        return names


def _open_mqtt(r: _Request) -> LiveSource:
    from streameval.transports.mqtt.transport import MqttSource

    # the image goes with the reset, to a server whose hello says it takes one
    return MqttSource(r.source(), conditioning=r.conditioning)


def _open_websocket(r: _Request) -> LiveSource:
    from streameval.transports.websocket.transport import WebSocketSource

    profile = _profile_for(r.url, r.options)
    names = r.key_names(profile)
    assert profile is not None  # _profile_for insists on one for a WebSocket
    return WebSocketSource(
        r.source(),
        profile=profile,
        key_names=names,
        keys_url=r.options.keys_url,
        conditioning=r.conditioning,
        kept=r.kept,
    )


def _open_webrtc(r: _Request) -> LiveSource:
    from streameval.transports.webrtc.transport import WebRTCSource

    if r.options.lossless and r.conditioning is not None and r.conditioning.has_image:
        raise BadInputError(r.url, OUR_PROTOCOL_TAKES_NO_IMAGE)

    profile = _profile_for(r.url, r.options)
    names = r.key_names(profile)
    return WebRTCSource(
        r.source(),
        key_names=names,
        lossless=r.options.lossless,
        profile=profile,
        conditioning=r.conditioning,
    )


def _open_mjpeg(r: _Request) -> LiveSource:
    from streameval.transports.mjpeg.transport import MjpegSource

    profile = _profile_for(r.url, r.options)
    names = r.key_names(profile)
    if not r.options.keys_url:
        raise BadInputError(r.url, "an MJPEG stream needs --keys-url URL to send keys to")
    return MjpegSource(
        r.source(),
        keys_url=r.options.keys_url,
        key_names=names,
        profile=profile,
        conditioning=r.conditioning,
    )


def _open_on_demand(r: _Request) -> LiveSource:
    """http(s):// (a request per chunk: ``segments/``) and exec: (a process on stdin:
    ``exec/``), both on-demand sources (``ondemand.py``). The clock is the video's (a server
    that generates when asked has no wall clock to keep); the stall guard and the connect
    timeout make room for the style's own, longer timeouts (a request's answer, a model
    loading before its first prompt)."""
    from streameval.transports.ondemand import TIMEOUT_MARGIN_S

    profile = _profile_for(r.url, r.options)
    if profile is not None and profile.lease is not None:
        return _open_websocket(r)  # the URL claims a WebSocket session ([lease])
    names = r.key_names(profile)
    assert profile is not None  # _profile_for insists on one for these
    if r.options.clock == "wall":
        raise BadInputError(
            "--clock", f"{r.url}: generates when asked, so its clock is the video's, not wall"
        )
    config = r.live
    source: type[ExecSource | SegmentSource]
    if profile.process is not None:
        from streameval.transports.exec.transport import ExecSource as source

        spec = profile.process
        live = replace(
            config,
            clock="video",
            connect_timeout_s=spec.start_timeout_s + TIMEOUT_MARGIN_S,
            no_frame_timeout_s=max(
                config.no_frame_timeout_s, spec.frame_timeout_s + TIMEOUT_MARGIN_S
            ),
        )
    else:
        from streameval.transports.segments.transport import SegmentSource as source

        timeout = profile.request.timeout_s if profile.request is not None else 0.0
        live = replace(
            config,
            clock="video",
            no_frame_timeout_s=max(config.no_frame_timeout_s, timeout + TIMEOUT_MARGIN_S),
        )
    return source(r.source(live), profile=profile, key_names=names)


def _open_browser(r: _Request) -> LiveSource:
    """``browser+http(s)://``: a web page's world in Chromium (``browser/``); the built-in
    ``web-wasd`` profile when none is given. The connect time-out makes room for starting
    Chromium, loading the page and its start condition."""
    from streameval.transports.browser.transport import LOAD_MARGIN_S, BrowserSource
    from streameval.transports.profiles import load_profile

    profile = _profile_for(r.url, r.options) or load_profile(DEFAULT_BROWSER_PROFILE)
    names = r.key_names(profile)
    start_s = profile.browser.start_timeout_s if profile.browser is not None else 30.0
    live = replace(r.live, connect_timeout_s=start_s * 2 + LOAD_MARGIN_S)
    return BrowserSource(r.source(live), profile=profile, key_names=names, page=r.options.page)


DEFAULT_BROWSER_PROFILE = "web-wasd"
"""A ``browser+`` URL without ``--profile``: the page's largest canvas/video, WASD and arrows."""


SCHEMES: dict[str, Callable[[_Request], LiveSource]] = {
    "mqtt": _open_mqtt,
    "mqtts": _open_mqtt,
    "webrtc+http": _open_webrtc,
    "webrtc+https": _open_webrtc,
    "mjpeg+http": _open_mjpeg,
    "mjpeg+https": _open_mjpeg,
    "ws": _open_websocket,
    "wss": _open_websocket,
    "http": _open_on_demand,
    "https": _open_on_demand,
    "exec": _open_on_demand,
    "browser+http": _open_browser,
    "browser+https": _open_browser,
}
"""URL scheme → the opener of its source: the one table of network transports."""
NETWORK_SCHEMES = tuple(SCHEMES)


NEEDS_PROFILE = {
    "ws": "a WebSocket server",
    "http": "a request-response server",
    "exec": "a program on stdin",
}
"""Transports with no common message format to fall back on: ``--profile`` says it all."""
URL_FORMS = {"ws": "ws://", "http": "http://", "exec": "exec:"}


def _profile_for(url: str, options: AttachOptions) -> ServerProfile | None:
    """The ``--profile`` of this attach, checked against the URL's transport; a WebSocket,
    a request-response server and a program need one (``NEEDS_PROFILE``); a web page without
    one has ``web-wasd`` (``DEFAULT_BROWSER_PROFILE``), what its case checks are made on."""
    scheme = url_scheme(url)
    transport = {"wss": "ws", "https": "http"}.get(scheme, scheme.split("+", 1)[0])
    if options.profile is None and transport == "browser" and not options.lossless:
        from streameval.transports.profiles import load_profile

        return load_profile(DEFAULT_BROWSER_PROFILE)
    if options.profile is None:
        if transport in NEEDS_PROFILE:
            what = NEEDS_PROFILE[transport]
            raise BadInputError(
                url, f"{what} needs --profile NAME|FILE.toml (`streameval profiles`)"
            )
        return None
    if options.lossless:
        raise BadInputError("--profile", "not with --lossless (our own protocol)")
    from streameval.transports.profiles import load_profile

    profile = load_profile(options.profile)
    if transport == "http" and profile.lease is not None:
        return profile  # the claim URL of a WebSocket session (docs/serve-formats.md#overworld)
    if profile.lease is not None and transport not in profile.transport:
        raise BadInputError(
            url,
            f"profile {profile.name!r} claims its session over HTTP first: give the claim "
            f"URL ({profile.url or 'http://HOST:PORT/claim?...'})",
        )
    if transport not in profile.transport:
        forms = ", ".join(URL_FORMS.get(t, f"{t}+http://") for t in profile.transport)
        raise BadInputError(
            url, f"profile {profile.name!r} is for {forms} URLs ({profile.url or 'see its file'})"
        )
    return profile


def _key_map_entries(text: str | None) -> dict[str, str]:
    """Only the entries ``--key-map`` names (already checked by ``parse_key_map``)."""
    out: dict[str, str] = {}
    for part in (text or "").split(","):
        ours, sep, theirs = part.partition("=")
        if sep:
            out[ours.strip().upper()] = theirs.strip()
    return out

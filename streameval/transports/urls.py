"""``attach URL`` for network servers: which transport, which clock, which options."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from streameval.errors import BadInputError
from streameval.protocol.wire import WireError, parse_key_map
from streameval.transports.base import Clock, LiveConfig, LiveSource

if TYPE_CHECKING:
    from streameval.transports.profiles import ServerProfile


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
    url: str, keys: tuple[str, ...], *, episode: str, suite: str, options: AttachOptions
) -> LiveSource:
    """The source for ``url``, chosen by its scheme in ``SCHEMES`` (one table)."""
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
    request = _Request(url, keys, episode, suite, live, options)
    if not scheme.startswith("mqtt"):
        request.key_names(None)  # a bad --key-map is named before the profile is read
    return SCHEMES[scheme](request)


@dataclass(frozen=True, slots=True)
class _Request:
    """What every opener gets: the URL, the keys, and the attach options."""

    url: str
    keys: tuple[str, ...]
    episode: str
    suite: str
    live: LiveConfig
    options: AttachOptions

    def common(self) -> dict[str, object]:
        return {
            "episode": self.episode,
            "suite": self.suite,
            "config": self.live,
            "fps": self.options.fps,
        }

    def key_names(self, profile: ServerProfile | None) -> dict[str, str]:
        """The server's name for each of our keys: ``--key-map`` over the profile's."""
        try:
            names = parse_key_map(self.options.key_map)
        except WireError as exc:
            raise BadInputError("--key-map", str(exc)) from None
        if profile is not None:
            from streameval.transports.profiles.keychannel import check_templates

            names = profile.key_names(_key_map_entries(self.options.key_map))
            check_templates(profile, names, self.keys)
        return names


def _open_mqtt(r: _Request) -> LiveSource:
    from streameval.transports.mqtt.transport import MqttSource

    return MqttSource(r.url, r.keys, **r.common())  # type: ignore[arg-type]


def _open_websocket(r: _Request) -> LiveSource:
    from streameval.transports.websocket.transport import WebSocketSource

    profile = _profile_for(r.url, r.options)
    names = r.key_names(profile)
    assert profile is not None  # _profile_for insists on one for a WebSocket
    return WebSocketSource(
        r.url,
        r.keys,
        profile=profile,
        key_names=names,
        keys_url=r.options.keys_url,
        **r.common(),  # type: ignore[arg-type]
    )


def _open_webrtc(r: _Request) -> LiveSource:
    from streameval.transports.webrtc.transport import WebRTCSource

    profile = _profile_for(r.url, r.options)
    names = r.key_names(profile)
    return WebRTCSource(
        r.url,
        r.keys,
        key_names=names,
        lossless=r.options.lossless,
        profile=profile,
        **r.common(),  # type: ignore[arg-type]
    )


def _open_mjpeg(r: _Request) -> LiveSource:
    from streameval.transports.mjpeg.transport import MjpegSource

    profile = _profile_for(r.url, r.options)
    names = r.key_names(profile)
    if not r.options.keys_url:
        raise BadInputError(r.url, "an MJPEG stream needs --keys-url URL to send keys to")
    return MjpegSource(
        r.url,
        r.keys,
        keys_url=r.options.keys_url,
        key_names=names,
        profile=profile,
        **r.common(),  # type: ignore[arg-type]
    )


def _open_on_demand(r: _Request) -> LiveSource:
    """http(s):// (a request per chunk) and exec: (a process on stdin): ``ondemand.py``."""
    from streameval.transports.ondemand import open_on_demand

    profile = _profile_for(r.url, r.options)
    names = r.key_names(profile)
    assert profile is not None  # _profile_for insists on one for these
    return open_on_demand(
        r.url,
        r.keys,
        profile=profile,
        key_names=names,
        clock=r.options.clock,
        **r.common(),  # type: ignore[arg-type]
    )


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
    a request-response server and a program need one (``NEEDS_PROFILE``)."""
    scheme = url_scheme(url)
    transport = {"wss": "ws", "https": "http"}.get(scheme, scheme.split("+", 1)[0])
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

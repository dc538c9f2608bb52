"""``attach URL`` for network servers: which transport, which clock, which options."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from streameval.errors import BadInputError
from streameval.protocol.wire import WireError, parse_key_map
from streameval.transports.live import Clock, LiveConfig, LiveSource

if TYPE_CHECKING:
    from streameval.transports.profiles import ServerProfile

NETWORK_SCHEMES = (
    "mqtt",
    "mqtts",
    "webrtc+http",
    "webrtc+https",
    "mjpeg+http",
    "mjpeg+https",
    "ws",
    "wss",
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


def is_network_url(url: str) -> bool:
    return url.split("://", 1)[0] in NETWORK_SCHEMES


def default_clock(url: str, lossless: bool) -> Clock:
    """Our protocol knows which key conditioned each frame: the video clock is exact there.
    A public server plays at its own rate: keys are held for wall time."""
    scheme = url.split("://", 1)[0]
    return "video" if scheme.startswith("mqtt") or lossless else "wall"


def open_network_source(
    url: str, keys: tuple[str, ...], *, episode: str, suite: str, options: AttachOptions
) -> LiveSource:
    scheme = url.split("://", 1)[0]
    if scheme not in NETWORK_SCHEMES:
        raise BadInputError(url, f"unsupported URL scheme {scheme!r}")
    if options.seconds_per_key <= 0:
        raise BadInputError("--seconds-per-key", f"must be > 0, got {options.seconds_per_key}")
    live = LiveConfig(
        clock=options.clock or default_clock(url, options.lossless),
        seconds_per_key=options.seconds_per_key,
        no_frame_timeout_s=options.no_frame_timeout_s,
    )
    common = {"episode": episode, "suite": suite, "config": live, "fps": options.fps}
    if scheme.startswith("mqtt"):
        from streameval.transports.mqtt import MqttSource

        return MqttSource(url, keys, **common)  # type: ignore[arg-type]
    try:
        names = parse_key_map(options.key_map)
    except WireError as exc:
        raise BadInputError("--key-map", str(exc)) from None
    profile = _profile_for(url, scheme, options)
    if profile is not None:
        from streameval.transports.keychannel import check_templates

        names = profile.key_names(_key_map_entries(options.key_map))
        check_templates(profile, names, keys)
    if scheme in ("ws", "wss"):
        from streameval.transports.websocket import WebSocketSource

        assert profile is not None
        return WebSocketSource(
            url,
            keys,
            profile=profile,
            key_names=names,
            keys_url=options.keys_url,
            **common,  # type: ignore[arg-type]
        )
    if scheme.startswith("webrtc"):
        from streameval.transports.webrtc import WebRTCSource

        return WebRTCSource(
            url,
            keys,
            key_names=names,
            lossless=options.lossless,
            profile=profile,
            **common,  # type: ignore[arg-type]
        )
    from streameval.transports.mjpeg import MjpegSource

    if not options.keys_url:
        raise BadInputError(url, "an MJPEG stream needs --keys-url URL to send keys to")
    return MjpegSource(
        url,
        keys,
        keys_url=options.keys_url,
        key_names=names,
        profile=profile,
        **common,  # type: ignore[arg-type]
    )


def _profile_for(url: str, scheme: str, options: AttachOptions) -> ServerProfile | None:
    """The ``--profile`` of this attach, checked against the URL's transport; a WebSocket
    needs one (its servers share no common message format to fall back on)."""
    transport = "ws" if scheme in ("ws", "wss") else scheme.split("+", 1)[0]
    if options.profile is None:
        if transport == "ws":
            raise BadInputError(
                url, "a WebSocket server needs --profile NAME|FILE.toml (`streameval profiles`)"
            )
        return None
    if options.lossless:
        raise BadInputError("--profile", "not with --lossless (our own protocol)")
    from streameval.transports.profiles import load_profile

    profile = load_profile(options.profile)
    if transport not in profile.transport:
        forms = ", ".join(f"{t}://" if t == "ws" else f"{t}+http://" for t in profile.transport)
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

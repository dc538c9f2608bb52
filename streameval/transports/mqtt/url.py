"""``mqtt://[USER:PASS@]HOST:PORT/SESSION`` (``mqtts://`` for TLS) and the session's topics.

Security options ride in the URL's query, so every command that takes a broker URL
(``attach``, ``serve``, ``dashboard --mqtt``, ``--publish-mqtt``, the ``pool`` commands, and
the pool members that build session URLs from the broker's) gets them without a flag of its
own: ``mqtts://USER:PASS@HOST:8883/SESSION?cafile=ca.pem&cert=client.pem&key=client.key``.
Names follow ``mosquitto_sub`` (``--cafile``, ``--cert``, ``--key``, ``--insecure``).
Without ``cafile`` the system's trusted CAs verify the broker; ``insecure=1`` (no check of
the broker's certificate at all, for a test broker) is never implied. The password may be
left out of the URL and given in ``STREAMEVAL_MQTT_PASSWORD`` instead, so it is not in the
process list either. Whatever is printed or written (``display``, error lines,
``scores.json``) never carries the password.
"""

from __future__ import annotations

import os
import socket
import ssl
from dataclasses import dataclass
from urllib.parse import parse_qs, quote, unquote, urlsplit, urlunsplit

from streameval.errors import BadInputError, redact_url

TOPIC_ROOT = "streameval"
DEFAULT_PORTS = {"mqtt": 1883, "mqtts": 8883}
TLS_OPTIONS = ("cafile", "cert", "key", "insecure")
PASSWORD_ENV = "STREAMEVAL_MQTT_PASSWORD"


@dataclass(frozen=True, slots=True)
class MqttTarget:
    url: str
    host: str
    port: int
    session: str | None
    username: str | None = None
    password: str | None = None
    tls: bool = False
    cafile: str | None = None
    certfile: str | None = None
    keyfile: str | None = None
    insecure: bool = False

    def topic(self, kind: str, session: str | None = None) -> str:
        """``streameval/SESSION/{frames,keys,status,scores}``."""
        name = session or self.session
        if not name:
            raise BadInputError(self.display, "no session in the URL (mqtt://HOST:PORT/SESSION)")
        return f"{TOPIC_ROOT}/{name}/{kind}"

    @property
    def display(self) -> str:
        """The URL without its password (for logs and results)."""
        scheme = "mqtts" if self.tls else "mqtt"
        user = f"{quote(self.username, safe='')}@" if self.username else ""
        return f"{scheme}://{user}{self.host}:{self.port}/{self.session or ''}"

    def session_url(self, session: str) -> str:
        """This broker's URL for ``session``, credentials and TLS options kept (a pool
        member drives the sessions it is offered with the broker URL it was given)."""
        parts = urlsplit(self.url)
        return urlunsplit(parts._replace(path=f"/{session}"))


def parse_mqtt_url(url: str, *, session_required: bool = True) -> MqttTarget:
    shown = redact_url(url)
    parts = urlsplit(url)
    if parts.scheme not in DEFAULT_PORTS:
        raise BadInputError(shown, "expected mqtt://[USER:PASS@]HOST:PORT/SESSION or mqtts://")
    if not parts.hostname:
        raise BadInputError(shown, "no broker host")
    try:
        port = parts.port or DEFAULT_PORTS[parts.scheme]
    except ValueError:
        raise BadInputError(shown, "port is not a number") from None
    session = parts.path.strip("/") or None
    if session is not None and not all(c.isalnum() or c in "-_." for c in session):
        raise BadInputError(shown, f"session {session!r}: use letters, digits, '-', '_', '.'")
    if session_required and session is None:
        raise BadInputError(shown, "no session in the URL (mqtt://HOST:PORT/SESSION)")
    tls = parts.scheme == "mqtts"
    options = _tls_options(shown, parts.query, tls)
    username = unquote(parts.username) if parts.username else None
    password = unquote(parts.password) if parts.password else None
    if username and password is None:
        password = os.environ.get(PASSWORD_ENV) or None
    return MqttTarget(
        url=url,
        host=parts.hostname,
        port=port,
        session=session,
        username=username,
        password=password,
        tls=tls,
        cafile=options.get("cafile"),
        certfile=options.get("cert"),
        keyfile=options.get("key"),
        insecure=options.get("insecure") in ("1", "true", "yes"),
    )


def _tls_options(shown: str, query: str, tls: bool) -> dict[str, str]:
    """``?cafile=&cert=&key=&insecure=``: known names only, files that exist, TLS only."""
    try:
        pairs = parse_qs(query, keep_blank_values=True, strict_parsing=bool(query))
    except ValueError:
        raise BadInputError(shown, f"cannot read the options {query!r}") from None
    options: dict[str, str] = {}
    for name, values in pairs.items():
        if name not in TLS_OPTIONS:
            raise BadInputError(shown, f"unknown option {name!r} (known: {', '.join(TLS_OPTIONS)})")
        if not tls:
            raise BadInputError(shown, f"option {name!r} needs TLS: use mqtts://")
        options[name] = values[-1]
    if options.get("insecure", "1") not in ("1", "true", "yes", "0", "false", "no"):
        raise BadInputError(shown, f"insecure={options['insecure']!r}: use 1 or 0")
    for name in ("cafile", "cert", "key"):
        if name in options and not os.path.isfile(options[name]):
            raise BadInputError(shown, f"{name}={options[name]!r}: no such file")
    if "key" in options and "cert" not in options:
        raise BadInputError(shown, "key= without cert=: a client key needs its certificate")
    return options


def client_kwargs(target: MqttTarget) -> dict[str, object]:
    """Keyword arguments for ``aiomqtt.Client`` (credentials; TLS verified against
    ``cafile`` or the system's CAs, with a client certificate when given)."""
    kwargs: dict[str, object] = {
        "hostname": target.host,
        "port": target.port,
        "username": target.username,
        "password": target.password,
        "max_queued_incoming_messages": 1024,
        # keys are a few bytes each: never held back behind an unacknowledged segment
        # (Nagle); no measurable change on loopback (bench/transport_latency.py), where
        # ACKs are immediate, but a real network delays them
        "socket_options": ((socket.IPPROTO_TCP, socket.TCP_NODELAY, 1),),
    }
    if target.tls:
        import aiomqtt

        kwargs["tls_params"] = aiomqtt.TLSParameters(
            ca_certs=target.cafile,
            certfile=target.certfile,
            keyfile=target.keyfile,
            cert_reqs=ssl.CERT_NONE if target.insecure else ssl.CERT_REQUIRED,
        )
        # paho's "insecure" only skips the host name; with CERT_NONE the chain is not checked
        # either: both, and only when the URL asks for it
        kwargs["tls_insecure"] = target.insecure
    return kwargs


REFUSED_CREDENTIALS = {4, 5, 134, 135}
"""CONNACK codes for a bad user name or password / not authorized (MQTT 3.1.1 and 5)."""


def connect_problem(exc: BaseException, otherwise: str = "cannot connect to the broker") -> str:
    """The one-line reason a broker connection failed, saying what to change: credentials
    refused, a certificate nobody here trusts, or the broker out of reach."""
    text = str(exc)
    code = getattr(exc, "rc", None)
    value = getattr(code, "value", code)
    if type(exc).__name__ == "MqttConnectError" and value in REFUSED_CREDENTIALS:
        return f"the broker refused the user name or password ({text})"
    if "CERTIFICATE_VERIFY_FAILED" in text or "certificate verify failed" in text:
        return (
            f"the broker's TLS certificate is not trusted ({text}); name its CA with ?cafile=PATH"
        )
    if "SSL" in text or "TLS" in text:
        return f"TLS handshake with the broker failed ({text})"
    return f"{otherwise}: {text}"


def is_mqtt_error(exc: BaseException) -> bool:
    """aiomqtt's errors and their subclasses (a refused CONNACK is ``MqttConnectError``),
    without importing aiomqtt for the WebRTC server."""
    return any(t.__name__ == "MqttError" for t in type(exc).__mro__)

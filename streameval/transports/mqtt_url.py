"""``mqtt://[USER:PASS@]HOST:PORT/SESSION`` (``mqtts://`` for TLS) and the session's topics."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from streameval.errors import BadInputError

TOPIC_ROOT = "streameval"
DEFAULT_PORTS = {"mqtt": 1883, "mqtts": 8883}


@dataclass(frozen=True, slots=True)
class MqttTarget:
    url: str
    host: str
    port: int
    session: str | None
    username: str | None = None
    password: str | None = None
    tls: bool = False

    def topic(self, kind: str, session: str | None = None) -> str:
        """``streameval/SESSION/{frames,keys,status,scores}``."""
        name = session or self.session
        if not name:
            raise BadInputError(self.url, "no session in the URL (mqtt://HOST:PORT/SESSION)")
        return f"{TOPIC_ROOT}/{name}/{kind}"

    @property
    def display(self) -> str:
        """The URL without its password (for logs and results)."""
        scheme = "mqtts" if self.tls else "mqtt"
        user = f"{self.username}@" if self.username else ""
        return f"{scheme}://{user}{self.host}:{self.port}/{self.session or ''}"


def parse_mqtt_url(url: str, *, session_required: bool = True) -> MqttTarget:
    parts = urlsplit(url)
    if parts.scheme not in DEFAULT_PORTS:
        raise BadInputError(url, "expected mqtt://[USER:PASS@]HOST:PORT/SESSION or mqtts://")
    if not parts.hostname:
        raise BadInputError(url, "no broker host")
    try:
        port = parts.port or DEFAULT_PORTS[parts.scheme]
    except ValueError:
        raise BadInputError(url, "port is not a number") from None
    session = parts.path.strip("/") or None
    if session is not None and not all(c.isalnum() or c in "-_." for c in session):
        raise BadInputError(url, f"session {session!r}: use letters, digits, '-', '_', '.'")
    if session_required and session is None:
        raise BadInputError(url, "no session in the URL (mqtt://HOST:PORT/SESSION)")
    return MqttTarget(
        url=url,
        host=parts.hostname,
        port=port,
        session=session,
        username=unquote(parts.username) if parts.username else None,
        password=unquote(parts.password) if parts.password else None,
        tls=parts.scheme == "mqtts",
    )


def client_kwargs(target: MqttTarget) -> dict[str, object]:
    """Keyword arguments for ``aiomqtt.Client`` (credentials, TLS with system CAs)."""
    kwargs: dict[str, object] = {
        "hostname": target.host,
        "port": target.port,
        "username": target.username,
        "password": target.password,
        "max_queued_incoming_messages": 1024,
    }
    if target.tls:
        import aiomqtt

        kwargs["tls_params"] = aiomqtt.TLSParameters()
    return kwargs

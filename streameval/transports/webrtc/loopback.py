"""aiortc on loopback: no STUN server, and host candidates on 127.0.0.1.

aiortc's default configuration adds a public STUN server, which a loopback peer must not
depend on (``RTCConfiguration(iceServers=[])``). aioice skips loopback addresses when it
gathers host candidates; a peer that talks to a server on 127.0.0.1 must offer exactly that
address (and nothing else: we never announce another interface of this machine to a loopback
peer).
"""

from __future__ import annotations

from typing import Any

LOOPBACK_HOSTS = ("127.0.0.1", "localhost")
_patched = False


def use_loopback_candidates() -> None:
    """Make aioice gather 127.0.0.1 only (idempotent, process-wide)."""
    global _patched
    if _patched:
        return
    import aioice.ice

    def loopback_only(use_ipv4: bool, use_ipv6: bool) -> list[str]:
        return ["127.0.0.1"] if use_ipv4 else []

    aioice.ice.get_host_addresses = loopback_only
    _patched = True


def peer_connection() -> Any:
    """An ``RTCPeerConnection`` without ICE servers (no public STUN is ever contacted)."""
    from aiortc import RTCConfiguration, RTCPeerConnection

    return RTCPeerConnection(RTCConfiguration(iceServers=[]))

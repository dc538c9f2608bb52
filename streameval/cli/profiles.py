"""``streameval profiles``: the built-in server profiles and what each server must speak.

One block per profile: its name, what it is for, the URL form to attach with and what it
expects (frames, keys, heartbeat, statistics), so a user picks ``--profile`` without reading
TOML (docs/serve-formats.md#server-profiles).
"""

from __future__ import annotations

import argparse
from typing import Any

from streameval.cli.exit_codes import EXIT_OK
from streameval.transports.profiles import built_in_profiles


def add_parser(sub: Any) -> None:
    sub.add_parser("profiles", help="the built-in server profiles and what each expects")


def run(args: argparse.Namespace) -> int:
    del args
    profiles = built_in_profiles()
    width = max(len(p.name) for p in profiles)
    for profile in profiles:
        print(f"{profile.name:<{width}} {profile.description}")
        print(f"{'':<{width}} attach {profile.url}")
        print(f"{'':<{width}} {profile.expects()}")
    print("a server none of these fits: --profile FILE.toml (docs/serve-formats.md)")
    return EXIT_OK

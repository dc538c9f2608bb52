"""What passes between evaluator and model: keys, action sequences, suites and schedules."""

from streameval.protocol.keys import (
    FAMILY,
    KEYS,
    NO_KEY,
    OPPOSITE,
    Family,
    channel_of,
    expected_sign,
    parse_key,
)
from streameval.protocol.schedule import Schedule, Segment, segments_from_keys
from streameval.protocol.suites import WORLDMARK, worldmark_keys

__all__ = [
    "FAMILY",
    "KEYS",
    "NO_KEY",
    "OPPOSITE",
    "WORLDMARK",
    "Family",
    "Schedule",
    "Segment",
    "channel_of",
    "expected_sign",
    "parse_key",
    "segments_from_keys",
    "worldmark_keys",
]

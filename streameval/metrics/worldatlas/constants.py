"""WorldAtlas memory_loop constants (docs/methods.md#worldatlas-memory_loop-metrics), named once.

The values are WorldAtlas's documented defaults; where its documentation is silent they are
the published ``benchmark.yaml`` memory_loop block the golden vectors were produced with.
"""

from __future__ import annotations

# --- return gate (docs/methods.md#memory_return_gate) ---
ROTATION_WEIGHT = 1.0  # lambda in d(i, j)
MAX_PAIR_DISTANCE = 0.15  # tau
MIN_GAP_SECONDS = 1.0  # Delta t_min
MIN_DEPARTURE_FACTOR = 3.0  # alpha
MIN_EXCURSION_FACTOR = 3.0  # beta
# E at or below this: rotation-only distance (docs/methods.md#memory_return_gate)
DEGENERATE_TRANSLATION_EXTENT = 1e-6
MAX_SCORED_PAIRS = 24  # pairs kept, spread over time gaps (docs/methods.md#memory_return_gate)

# --- memory scene F1 (docs/methods.md#memory_scene_f1) ---
MAX_FRAMES_PER_SEGMENT = 8
MAX_POINTS_PER_FRAME = 4096
DISTANCE_THRESHOLD_RATIO = 0.02  # tau_d = 0.02 * diag
DISTANCE_THRESHOLD_FLOOR = 1e-6  # a degenerate (single-point) scene still gets a threshold
F1_THRESHOLD_FLOOR = 1e-8
ICP_TRIM_FRACTION = 0.8
ICP_MAX_ITERATIONS = 20
ICP_TOLERANCE = 1e-5
ICP_MAX_TRANSLATION_RATIO = 0.10
ICP_MAX_ROTATION_DEGREES = 10.0
MIN_SEGMENT_POSE_FRAMES = 2  # each side of a split needs at least two pose frames

# --- keystroke nATEt / nATEr (docs/methods.md#keystroke_natet, docs/methods.md#keystroke_nater) ---
MIN_PATH_LENGTH = 0.5  # l_min, pose units
MIN_ROTATION_DEGREES = 10.0  # nATEr's normaliser floor
MOVE_SPEED_THRESHOLD = 0.06  # pose units / second: observed translation activity

# --- protocol state (docs/methods.md#suites) ---
TARGET_FPS = 24.0
ANCHOR_POSITIONS = (0.0, 0.3333, 0.6667, 1.0)
MOTION_FRAMES = 12
SEGMENT_COUNT = 4
PROTOCOL_SEED = 17
MEMORY_LOOP_SECONDS = 60.0

# --- real-time axis (docs/methods.md#real-time-metrics) ---
BASELINE_SAMPLES = 4
"""Samples before a change whose mean and spread set the response threshold."""
BASELINE_STDS = 2.0
"""The threshold is the larger of a floor and the baseline's mean + this many std: motion the
world already made before the change (drift, noise) does not answer it."""
RESPONSE_TIMEOUT_S = 1.0
"""A change unanswered this long counts as answered at this latency."""
RESPONSE_WINDOW_CLOSED = True
"""The search ends at the next change or the timeout *inclusive*: an answer seen exactly at
the timeout is answered within it (the interactivity block's window, ``metrics/interactivity.py``,
is half-open instead)."""
DEFAULT_LATENCY_BUDGET_S = 1.0
"""``--latency-budget``'s default: WorldAtlas's timeout."""

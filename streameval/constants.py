"""Seed constants, named once (seed 000 and SPEC.md). Never re-type these elsewhere."""

from __future__ import annotations

# --- analysis frame and signals (SPEC §2) ---
ANALYSIS_WIDTH = 640
ANALYSIS_HEIGHT = 432
FLOW_STRIDE = 2  # signal i = flow from frame i to frame i + 2
FOV_DEG = 70.0  # horizontal field of view assumed for angle <-> flow conversion

# --- segments (SPEC §2) ---
STABLE_SKIP_HEAD_S = 3.0  # dropped from the start of every segment but the first
STABLE_SKIP_TAIL_S = 1.0  # dropped from the end of every segment but the last
MIN_WINDOW_SAMPLES = 3  # fewer signal samples in a window -> not_applicable

# --- motion type fit (SPEC §3) ---
FIT_FROM_FRAC = 0.25
FIT_TO_FRAC = 0.90
FIT_EVERY_S = 1.0
FIT_MIN_FRAMES = 3
FIT_PIXEL_STEP = 6
FIT_INVZ_PCT = (1.0, 99.0)
FIT_AMP_PCT = (5.0, 95.0)
MIN_DEPTH = 1e-3
FIT_EPS = 1e-6

# --- control metrics (SPEC §4) ---
DIR_EPS = 1e-9
STABILITY_BASELINE_PCT = 70.0
STABILITY_SMOOTH_S = 0.3
STABILITY_LOW = 0.4
STABILITY_RECOVER = 0.5
STABILITY_HICCUP_SCALE = 0.5
STABILITY_DECAY_WINDOW_S = 3.0
STABILITY_DECAY_CLIP = 1.2
STABILITY_DECAY_KNEE = 0.7
STABILITY_G_MIN = 1e-6
LATENCY_REF_PCT = 75.0
LATENCY_SMOOTH_S = 0.5
LATENCY_THRESHOLD = 0.5
LATENCY_RESPONSE_GATE = 0.1
LATENCY_MIN_SS_SAMPLES = 2  # steady state is 0 if the stable zone has <= this many samples

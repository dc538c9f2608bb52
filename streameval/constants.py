"""WorldMark constants (docs/methods.md), named once. Never re-type these elsewhere."""

from __future__ import annotations

# --- frame rate ---
# The rate assumed where nobody says one: WorldMark's nominal 16 fps (docs/methods.md#suites).
# A model or server that states its own fps, a recording's timestamps and ``--fps`` win over it.
DEFAULT_FPS = 16.0
# The real-time verdict's target, in native frames a second (LiveFrame's threshold:
# docs/methods.md#runtime); ``--realtime-target`` changes it. Equal to DEFAULT_FPS by origin
# (WorldMark's rate is what "real time" meant there), named apart: one can change alone.
REALTIME_TARGET_FPS = DEFAULT_FPS

# --- analysis frame and signals (docs/methods.md#analysis-frame-and-flow-units) ---
ANALYSIS_WIDTH = 640
ANALYSIS_HEIGHT = 432
FLOW_STRIDE = 2  # signal i = flow from frame i to frame i + 2
FOV_DEG = 70.0  # horizontal field of view assumed for angle <-> flow conversion

# --- segments (docs/methods.md#control-segments) ---
STABLE_SKIP_HEAD_S = 3.0  # dropped from the start of every segment but the first
STABLE_SKIP_TAIL_S = 1.0  # dropped from the end of every segment but the last
MIN_WINDOW_SAMPLES = 3  # fewer signal samples in a window -> not_applicable

# --- motion type fit (docs/methods.md#motion-type-fit) ---
FIT_FROM_FRAC = 0.25
FIT_TO_FRAC = 0.90
FIT_EVERY_S = 1.0
FIT_MIN_FRAMES = 3
FIT_PIXEL_STEP = 6
FIT_INVZ_PCT = (1.0, 99.0)
FIT_AMP_PCT = (5.0, 95.0)
# The depth-free estimator's spreads on derotated samples (ours, not the reference's): P10-P90,
# not P5-P95. Why: an aliased renderer's silhouettes jump whole columns as a turn moves them
# (3-8 of ~160 grid points a frame, the u residual there up to ±0.4 px on a 4.4 px turn), which
# P95 - P5 read as parallax (clean 4.5 °/s turns p_yaw 0.963 in one town); a strafe's parallax
# spans the frame and barely narrows (docs/methods.md#motion-type-fit, "Spread").
DEPTH_FREE_SPREAD_PCT = (10.0, 90.0)
# On derotated samples the depth-free rot_amp is sqrt(ω² − (k·SE)²)·f, k this, SE the standard
# error of ω's own least-squares fit on v (ours): scatter in v adds to the measured ω in
# quadrature, and an ω within k standard errors of 0 is no turn at all. Why: a strafe past
# high-frequency stripes (the OpenGL room) measures v with 0.2-0.5 px of scatter, and its ω read
# 0.1-2.4 px of turn per pair (p_trans 0.903-0.932). The clean strafes' ω (true ω 0) sit at
# |ω|/SE RMS 1.0 (procedural), 1.3 (OpenGL noise walls), 2.4 (high-frequency walls), at most 4.5:
# neighbouring grid points share DIS's patches, so the nominal SE is too small where the flow's
# error is correlated. A 15 px turn at SE 0.6 px keeps 98 % of itself.
DEPTH_FREE_OMEGA_SE = 5.0
MIN_DEPTH = 1e-3
FIT_EPS = 1e-6

# --- still-video floor (docs/methods.md#still-video-floor) ---
# Mean flow magnitude per signal sample (stride-2 flow, analysis pixels) below which a video
# does not move: Local Memory's episodes are frozen and control segments score no_motion.
# Measured with DIS on still x264 videos (CRF 18 and 28; noise textures, flat colours,
# high-frequency detail, gradients): mean ≤ 0.0008 px. A pan of 0.05 px per frame measures
# 0.055–0.11 px and every golden Local case ≥ 0.17 px, so 0.02 sits 25× above the noise and
# well below the slowest motion anyone would call motion (0.16 px/s at 16 fps).
MOTION_FLOOR_PX = 0.02

# --- control metrics (docs/methods.md#control-metrics) ---
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

# --- memory metrics (docs/methods.md#memory-metrics) ---
# (read by metrics/memory/local_memory.py, revisit_memory.py and global_memory.py)
# Local Memory; δ is per episode (docs/methods.md#per-episode-motion-step)
LOCAL_DELTA_S = 0.5  # WorldMark's DELTA_FRAC: δ = mean(mag) × (0.5 s × fps), per episode
LOCAL_MIN_SAMPLES = 5  # WorldMark's NMIN: fewer motion-indexed samples -> frozen (not_applicable)
TAU_MUT = 0.10  # WorldMark: adjacent 1 − cos above this is a mutation
CUT_GUARD_S = 0.5  # WorldMark's CUT_GUARD = 8 frames at 16 fps; frames = round(0.5 s × real fps)
# Revisit Memory
N_PAIRS_C2 = 10  # depths (pairs) per reversal
REACH_SCAN_DEPTHS = 200  # depths scanned for reach_lo
MIN_GAP_S = 2.0  # a revisit pair is at least this far apart in time
TAU_C = 1.0  # revisit score scale, shared by trans and rot
TOL_ARC_PX = 30.0  # translation arc-match tolerance (flow px)
ROT_TOL_DEG = 3.0  # rotation arc-match tolerance
# "rotation 3° with a 5° lower bound" (docs/methods.md#revisit_memory): rotation depths start >= 5°
ROT_DEPTH_FLOOR_DEG = 5.0
ROT_MAG_GATE_DEG = 15.0  # undershoot gate: outbound rotation below this fails
DIR_GATE = 0.3  # both legs need sum(v)/sum(|v|) >= this
GAIN_GATE = 0.5  # min/max of the two legs' arcs
COV_GATE = 0.3  # kept pairs / N_PAIRS_C2 below this flags the reversal partial
RESPONSE_FRAC = 0.2  # response onset: rolling mean of v >= 0.2 × mean|channel|
RESPONSE_ROLL = 3  # samples in that rolling mean
# Global Memory
TAU_G = 0.05  # 100 / (1 + e / TAU_G)
GLOBAL_VIEW_EVERY_S = 1.0  # one view per second of video
GLOBAL_MIN_VIEWS = 6
GLOBAL_MAX_VIEWS = 64
COVIS_DEPTH_RATIO = (0.7, 1.4)  # open interval: projected z / target depth
COVIS_MIN_POINTS = 5  # an ordered pair with fewer co-visible points is skipped
GLOBAL_POINTS_PER_VIEW = 4096  # deterministic subsample of confident pixels (not a WorldMark value)

# episode.json / EpisodeInfo.extra: the keys of a delivery without an action log. Its segments
# are the reference's equal split of the signal time (metrics.segments.equal_split_spans,
# docs/methods.md#control-segments), not the runs of the per-frame keys the replay streams with.
EQUAL_SPLIT_KEYS = "equal_split_keys"

/* SPDX-License-Identifier: MIT */
/*
 * Every capacity and tuning constant of the receiver, in one place.
 * Sizes fixed by a format (the wire's datagram, evdev's button range, a
 * frame of input events) stay with that format, and sizes derived from
 * these (ring masks, the session index, io_uring queue depths) stay with
 * their code, tied to these by _Static_assert.
 *
 * Times are microseconds. Motion and scroll travel in Q8 fixed point:
 * 256 units per pixel, or per hi-res wheel unit (1/120 of a notch, the
 * REL_WHEEL_HI_RES unit since Linux 5.0), so sub-pixel finger movement is
 * carried rather than truncated.
 */
#ifndef REMOLO_LIMITS_H
#define REMOLO_LIMITS_H

/* ---- fixed point -------------------------------------------------------- */
#define REMOLO_Q8_ONE            256      /* units per pixel / per hi-res unit */
#define REMOLO_HIRES_PER_NOTCH   120      /* REL_WHEEL_HI_RES units per notch */

/* ---- drain clock (design note, part 5: a strict 480 Hz timer) ------------------ */
#define REMOLO_TICK_HZ           480
#define REMOLO_TICK_NS           2083333u /* 1e9 / 480, for timerfd */
#define REMOLO_TICK_US           2083u
/* The drain period is the loop's own (rx_config.tick_ns, 0 = the 480 Hz
 * default): `remolo receive --drain-hz` picks a multiple of the display's
 * refresh (docs/drain-rate.md). 120 Hz is the sender's frame rate, below
 * which one tick would carry several frames; 2000 Hz is a period of 500 us,
 * twice the loop's p99 tick lateness measured on a loaded 2-core host, past
 * which ticks merge more often than they run. Auto picks at most 1000 Hz:
 * a common multiple of several displays beyond that costs more CPU than
 * its smoothness buys (docs/drain-rate.md, "Several displays"). */
#define REMOLO_DRAIN_HZ_MIN      120u
#define REMOLO_DRAIN_HZ_MAX      2000u
#define REMOLO_DRAIN_HZ_AUTO_MAX 1000u
#define REMOLO_TICK_NS_MIN       500000u  /* 1e9 / REMOLO_DRAIN_HZ_MAX */
#define REMOLO_TICK_NS_MAX       8333334u /* 1e9 / REMOLO_DRAIN_HZ_MIN, rounded up */

/* ---- clock offset (design note, part 4) ---------------------------------------- */
/* Between new minima the offset creeps up by 2 ms per second (2000 ppm). */
#define REMOLO_CREEP_PPM         2000u
/* Silence longer than this forgets the offset: the next packet sets it. */
#define REMOLO_GAP_RESET_US      2000000u
/* A packet later than this cannot be jitter: the sender clock stepped
 * backwards (or the offset was poisoned); rebase on that packet. */
#define REMOLO_STEP_RESET_US     1000000u

/* ---- delay (jitter buffer) ---------------------------------------------- */
#define REMOLO_WINDOW            240u     /* latenesses kept for the quantile */
#define REMOLO_WINDOW_MAX        256u     /* ring capacity; power of two */
#define REMOLO_QUANTILE_PERMILLE 950u     /* 95th percentile, nearest rank */
#define REMOLO_DELAY_MARGIN_US   3000u
#define REMOLO_DELAY_MIN_US      6000u
#define REMOLO_DELAY_MAX_US      60000u
#define REMOLO_DELAY_START_US    12000u
#define REMOLO_SHRINK_PERMILLE   10u      /* 1% of the delay per packet */
/* Latenesses are clamped to this before entering the window. */
#define REMOLO_LATENESS_CAP_US   10000000u
/* The delay chooser (stall_weight, chooser.c): the candidate delays, the
 * experts it weighs. Dense where a quiet network's best delay lies (a
 * millisecond apart up to 4 ms), coarser above, where a step of a few
 * milliseconds is a few percent of the delay; up to the design note's
 * 60 ms clamp. */
#define REMOLO_CHOOSER_CANDIDATES 20u
#define REMOLO_CHOOSER_CANDIDATES_US                                                        \
	{ 0, 1000, 2000, 3000, 4000, 6000, 8000, 10000, 13000, 16000, 20000, 25000, 30000, 35000, \
	  40000, 50000, 60000, 70000, 85000, 100000 }
/* One packet's stall or catch-up latency is charged at most this much: a
 * hold of seconds is a lost link, which no delay covers. */
#define REMOLO_CHOOSER_STALL_CAP_US 1000000u
#define REMOLO_CHOOSER_WEIGHT_MAX   10000u
/* The chooser's weight: one millisecond of a stalled cursor costs as much
 * as 30 ms of delay on one packet (docs/playout.md, "How the delay is
 * chosen"). The default's, with its floor (choose_floor); 0 in the seed. */
#define REMOLO_STALL_WEIGHT         30u
#define REMOLO_CHOOSE_HORIZON_SHIFT 10u     /* ~1024 packets: 8.5 s at 120 Hz */
#define REMOLO_CHOOSE_HYSTERESIS_PERMILLE 50u
#define REMOLO_CHOOSER_SHIFT_MAX    16u
/* A returning sender (recall.c): the zero-delay shadow's lateness in 1 ms
 * bins, bin b holding (b - 1, b] ms and bin 0 a packet on time, to 127 ms
 * (the last bin holds everything above 126 ms). The memory counts
 * movement time, not packets: a packet weighs its frame, one unit per
 * 2^5 us (260 at a 120 Hz sender, 130 at 240 Hz, at most a 50 ms
 * frame's 1562), and every bin is aged by 1/8 each 2^21 units (67 s of
 * movement), so the memory is about nine minutes of movement, some
 * thirty 30 s sessions of the lab's gestures, at any sender rate. It is
 * held only once it has 2^21 units (67 s: four or five such sessions;
 * one session's holds are its own luck). A session overrules it after
 * 2^10 packets of its own (8.5 s at 120 Hz), checked every 128, that read
 * less than a quarter or more than four times as long, by 10 ms besides
 * (chooser.c): that check counts packets, the sample its quantile is read
 * from (counted in time, a 60 Hz sender's 8 s read too few to tell its
 * luck from another network: RESULTS.md, round 16). A count that reaches
 * 2^31 folds back by 2^30, a whole number of agings, so it never
 * saturates. */
#define REMOLO_RECALL_BINS          128u
#define REMOLO_RECALL_BIN_US        1000u
#define REMOLO_RECALL_UNIT_SHIFT    5u
#define REMOLO_RECALL_FRAME_MAX_US  50000u
#define REMOLO_RECALL_AGE_SHIFT     21u
#define REMOLO_RECALL_AGE_BY        3u
#define REMOLO_RECALL_MIN_MOVED     (1u << 21)
#define REMOLO_RECALL_CHECK_PACKETS 1024u
#define REMOLO_RECALL_FOLD_AT       (1u << 31)
#define REMOLO_RECALL_FOLD_BY       (1u << 30)
#define REMOLO_RECALL_CHECK_SLACK_US 10000u
#define REMOLO_RECALL_CHECK_RATIO   4u
/* The aging's steady state holds about 8 * 2^21 = 2^24; a loaded memory
 * may hold up to four times that. */
#define REMOLO_RECALL_TOTAL_MAX     (1u << 26)
/* The share of the memory's movement later than the held delay at no
 * delay (recall_permille in the default): under 4.5%. */
#define REMOLO_RECALL_PERMILLE      45u
/* A returning session keeps the delay the session before it held while
 * the memory's reading lies within 1/2^3 of it. One session is a few
 * percent of the memory's weight, yet on a network of rare long holds it
 * moves the reading by its own luck: S4's went 79, 76, 75, 79, 77, 81,
 * 87, 87, 82, 79 ms over ten sessions in a row (seeds 6-15). A pinned
 * delay is the same in every session; sessions that each hold their
 * reading pool to the largest at the 95th percentile and to the mean in
 * jitter, and were beaten at every phase by `fixed:85` there (RESULTS.md,
 * round 15). A move past 1/8 is more than one session's luck. */
#define REMOLO_RECALL_KEEP_SHIFT    3u

/* ---- segments ----------------------------------------------------------- */
#define REMOLO_SEG_MAX_US        50000u   /* a packet spreads over <= 50 ms */
#define REMOLO_SEG_MIN_US        1000u    /* duplicate timestamps: 1 ms */
#define REMOLO_LATE_MIN_US       4000u    /* a late packet replays over 4..16 ms */
#define REMOLO_LATE_MAX_US       16000u
#define REMOLO_SEGQ_CAP          128u     /* power of two */
#define REMOLO_BTNQ_CAP          32u      /* power of two */
/* Recent motion placements remembered for late keys and buttons (sender
 * time, end of play: playout.c, motion_end_by): as many as the segment
 * ring holds, so every segment still queued has its mark unless motion was
 * merged or forced past a full ring; past that a late key or button goes
 * after all queued motion. 16 bytes each: 2 KB a session. */
#define REMOLO_MARKS_CAP         128u     /* power of two */
/* Key events queued per session (keyq.c). A text of 256 characters, each
 * typed with at most 6 key events (a press and a release of its key and of
 * up to two modifiers, Shift and AltGr), is 1536 events: the largest text
 * message fits whole, so the queue never cuts a text short. 8 bytes an
 * event: 16 KB a session. */
#define REMOLO_KEYQ_CAP          2048u    /* power of two */
/* Key changes one session lets out per drain tick. evdev gives each reader
 * of a keyboard a buffer of 64 events (EVDEV_MIN_BUFFER_SIZE in
 * drivers/input/evdev.c: a device with keys only gets no larger hint),
 * and a tick's frame is its changes plus SYN_REPORT. At 2 a tick a reader
 * may stall 21 ticks (44 ms at 480 Hz) before its buffer overflows
 * (SYN_DROPPED: typed characters lost); at 16 a tick, 3 ticks. Typing is
 * still fast: 960 changes a second, a 256-character text in under a
 * second. */
#define REMOLO_KEYS_PER_TICK     2u
#define REMOLO_KEYQ_TEXT_EVENTS  (256u * 6u)
#define REMOLO_IDLE_US           500000u  /* stop the timer after 0.5 s quiet */

/* ---- gestures (gesture.c; docs/gestures.md) ---------------------------- */
/* Gesture states queued per session: one per gesture datagram, about 120 a
 * second, so 32 hold a quarter of a second, more than the largest delay
 * keeps waiting. A state that finds the ring full joins the newest one of
 * its gesture (states are absolute, so joining loses nothing but a step). */
#define REMOLO_GESTQ_CAP         32u      /* power of two */
/* A gesture whose state has not been renewed for this long is ended and
 * its fingers lifted: the last guard against a sender that never ends it.
 * A sender renews it at least every 100 ms (a heartbeat's period) and ends
 * it reliably over the control channel; one second also rides out the
 * stalls Wi-Fi is measured to have (field notes: S4 p99 250 ms). */
#define REMOLO_GESTURE_STALE_US  1000000u
/* The largest centroid offset a gesture state may carry, per axis, in
 * micrometres: 500 mm, four times across the largest phone or pad. */
#define REMOLO_GESTURE_MAX_UM    500000
/* A pinch's scale, Q16 (65536 = 1): from 1/64 to 64. */
#define REMOLO_GESTURE_SCALE_ONE 65536
#define REMOLO_GESTURE_SCALE_MIN 1024
#define REMOLO_GESTURE_SCALE_MAX 4194304
/* A pinch's turn, microradians either way: four whole turns. */
#define REMOLO_GESTURE_ANGLE_MAX 25132741

/* ---- sessions and the receive loop -------------------------------------- */
/* Live sessions one receiver opens datagrams for (a few paired senders,
 * each possibly reconnecting while its old session drains). */
#define REMOLO_SESSIONS_MAX      32u
/* Provided receive buffers: a power of two (the kernel's buffer ring indexes
 * with a mask). 256 covers a burst of ~2 ms at loopback line rate. */
#define REMOLO_RX_BUFS           256u
/* Commands queued from other threads and not yet run by the loop. */
#define REMOLO_RX_CMDQ_CAP       64u
/* Key events one command carries (RX_OP_KEYS): the command ring then holds
 * a whole key queue's worth at once, so a text's burst of key events fits
 * in the ring without waiting for the loop. */
#define REMOLO_RX_KEYS_PER_CMD   32u

/* ---- timing histograms (rx_stats) --------------------------------------- */
/* Tick lateness and due-to-write times, in microseconds, counted into
 * log-linear buckets (rx_hist_bucket): exact below REMOLO_HIST_LINEAR, then
 * REMOLO_HIST_SUB buckets per octave, so a bucket is at most 1/4 of its
 * lower bound wide; the last bucket holds everything from 2^17 us (131 ms)
 * up. 64 words each: the published snapshot stays small. */
#define REMOLO_HIST_LINEAR       8u
#define REMOLO_HIST_SUB          4u
#define REMOLO_HIST_BUCKETS      64u

/* ---- measured improvements (the default policy; the seed keeps 0) -------
 * From the smoothness lab (Sources/RemoloLab/RESULTS.md). */
/* Movement intervals up to a 60 Hz frame (16.7 ms) are sender frames: the
 * first packet after a pause carries one frame of motion and spreads over
 * one frame, not over up to 50 ms (which slowed every start of a move and
 * overlapped the next packets). */
#define REMOLO_FRAME_MAX_US      17000u
/* The offset also rises to the fastest trip of the last two 0.5 s windows:
 * a sender clock stepped back (or a slower route) is followed in about a
 * second instead of at 2 ms/s, while a 300 ms stall cannot fill a window. */
#define REMOLO_RISE_WINDOW_US    500000u
/* The schedule time-stretches instead of shifting: playback runs at most
 * 10% faster or slower while the applied delay follows the offset and the
 * delay (the field notes' oracle stretches by the same bound). */
#define REMOLO_SLEW_PERMILLE     100u
/* A backlog behind a held datagram drains at up to 1.5 times real time: a
 * hold of n frames is caught up over 2n frames, each frame showing at most
 * half a frame's motion extra (the design note's 4-16 ms replay of a late
 * packet shows its whole motion in one or two ticks). */
#define REMOLO_CATCHUP_PERMILLE  500u
/* With late packets caught up by stretching, a small delay costs less than
 * the design note's 6 ms floor and 12 ms start: the default starts at its
 * floor of 2 ms, with a 2 ms margin over the 95th percentile (S1: p95 added
 * latency 16.5 -> 12.9 ms). */
/* An offset change beyond 128 ms is a step of the sender's clock, not a
 * faster or slower route: NTP steps a clock only past 128 ms and slews it
 * below. The schedule is re-anchored at once and any backlog caught up by
 * the stretch; keeping its place instead held every packet as much longer
 * while the 10% slew worked it off, for ten times the step (S7 seed 9: p95
 * added latency 197 -> 12.8 ms). */
#define REMOLO_KEEP_MAX_US       128000u
/* Motion recovered from a session's running totals (the redundancy
 * feature, remolo_wire.h) plays over the lost datagrams' own frames, but
 * over at most this long: a gap of half a second would otherwise replay
 * half a second of motion, behind schedule, while the finger has moved on
 * (docs/smoothness.md, "Redundancy"). */
#define REMOLO_LOST_SPAN_MAX_US  50000u
/* A hostile or broken sender's totals may claim any motion: what one gap
 * recovers is bounded by the single-packet bound for each datagram the
 * counter skipped, up to this many. */
#define REMOLO_LOST_BOUND_DATAGRAMS 128u
#define REMOLO_DEFAULT_DELAY_MIN_US     2000u
#define REMOLO_DEFAULT_DELAY_START_US   2000u
#define REMOLO_DEFAULT_DELAY_MARGIN_US  2000u
/* The chooser's policy in the lab (`remolo simulate --policy chooser`;
 * docs/playout.md, "How the delay is chosen"): its candidates reach past
 * the design note's 60 ms clamp, where long stalls recur. */
#define REMOLO_CHOOSER_DELAY_MAX_US     100000u
/* choose_floor (delay.c): the session's own reading of its knee is taken
 * every REMOLO_FLOOR_EVERY movement packets (one pass over the recall
 * bins), from REMOLO_FLOOR_MIN_PACKETS on: two windows' worth, so that
 * the reading has seen more than the window it is set against. */
#define REMOLO_FLOOR_EVERY        128u
#define REMOLO_FLOOR_MIN_PACKETS  512u
/* The floor's window in 1 ms bins, to 127 ms (the last bin holds what is
 * later), as the recall's: past the 100 ms of any clamp. */
#define REMOLO_FLOOR_BINS         128u
#define REMOLO_FLOOR_BIN_US       1000u

/*
 * The single-packet bound. One packet moves the pointer at most 1024 px per
 * axis (a quarter of a 4K screen; a 240 Hz flick at 10 m/s on a phone is
 * ~200 px/frame after acceleration) and scrolls at most 10 notches. Larger
 * deltas are clamped, counted, and never wrap.
 */
#define REMOLO_MAX_MOTION_Q8     (1024 * REMOLO_Q8_ONE)
#define REMOLO_MAX_SCROLL_Q8     (10 * REMOLO_HIRES_PER_NOTCH * REMOLO_Q8_ONE)

/*
 * Output through an adapter (remolo receive --output x11): the drain writes
 * its frames into a non-blocking pipe and a thread of the adapter's own
 * turns them into calls (XTest, D-Bus), so a peer that stalls costs frames
 * only after the pipe is full, never a late tick. The pipe holds
 * REMOLO_OUTPUT_STALL_MS of full frames at 480 Hz several times over
 * (asserted in remolo_ptrdev.h, where a frame's size is known); a pipe's
 * size is a power-of-two number of pages (fcntl F_SETPIPE_SZ, pipe(7)).
 */
#define REMOLO_OUTPUT_STALL_MS   200u
#define REMOLO_OUTPUT_PIPE_BYTES 262144u

_Static_assert((REMOLO_WINDOW_MAX & (REMOLO_WINDOW_MAX - 1)) == 0, "window ring: power of two");
_Static_assert(REMOLO_WINDOW <= REMOLO_WINDOW_MAX, "window fits its ring");
_Static_assert((REMOLO_SEGQ_CAP & (REMOLO_SEGQ_CAP - 1)) == 0, "segment ring: power of two");
_Static_assert((REMOLO_BTNQ_CAP & (REMOLO_BTNQ_CAP - 1)) == 0, "button ring: power of two");
_Static_assert((REMOLO_GESTQ_CAP & (REMOLO_GESTQ_CAP - 1)) == 0, "gesture ring: power of two");
_Static_assert(REMOLO_GESTURE_SCALE_MIN < REMOLO_GESTURE_SCALE_ONE && REMOLO_GESTURE_SCALE_ONE < REMOLO_GESTURE_SCALE_MAX,
	       "a pinch's scale range holds 1");
_Static_assert((REMOLO_MARKS_CAP & (REMOLO_MARKS_CAP - 1)) == 0, "motion marks ring: power of two");
_Static_assert(REMOLO_MARKS_CAP >= REMOLO_SEGQ_CAP, "a mark for every queued segment");
_Static_assert(REMOLO_DELAY_MIN_US <= REMOLO_DELAY_START_US &&
               REMOLO_DELAY_START_US <= REMOLO_DELAY_MAX_US, "start delay inside the clamp");
_Static_assert(REMOLO_LATE_MIN_US <= REMOLO_LATE_MAX_US, "late replay range");
_Static_assert((REMOLO_RECALL_BINS & (REMOLO_RECALL_BINS - 1)) == 0, "recall bins: power of two");
_Static_assert((unsigned long long)REMOLO_RECALL_TOTAL_MAX + (1ull << REMOLO_RECALL_AGE_SHIFT) +
               (REMOLO_RECALL_FRAME_MAX_US >> REMOLO_RECALL_UNIT_SHIFT) < (1ull << 32),
               "a recall bin cannot overflow between two agings");
_Static_assert(REMOLO_RECALL_MIN_MOVED >> REMOLO_RECALL_UNIT_SHIFT >= REMOLO_RECALL_CHECK_PACKETS,
               "a memory holds more than a check's packets at their longest frames");
_Static_assert(REMOLO_RECALL_FOLD_BY % (1u << REMOLO_RECALL_AGE_SHIFT) == 0 &&
               REMOLO_RECALL_FOLD_BY >= REMOLO_RECALL_MIN_MOVED && REMOLO_RECALL_FOLD_BY < REMOLO_RECALL_FOLD_AT,
               "a fold keeps the aging's phase and a usable memory usable");
_Static_assert((unsigned long long)REMOLO_RECALL_FOLD_AT + (REMOLO_RECALL_FRAME_MAX_US >> REMOLO_RECALL_UNIT_SHIFT) < (1ull << 32),
               "a count below the fold takes one more packet");
_Static_assert(REMOLO_RECALL_KEEP_SHIFT >= 1 && REMOLO_RECALL_KEEP_SHIFT < 16, "the keep band is a fraction of the held delay");
_Static_assert(REMOLO_WINDOW_MAX < 65536 && (REMOLO_FLOOR_BINS & (REMOLO_FLOOR_BINS - 1)) == 0,
               "the floor's window: a bin's count in 16 bits, a power of two of bins");
_Static_assert((REMOLO_FLOOR_EVERY & (REMOLO_FLOOR_EVERY - 1)) == 0 && REMOLO_FLOOR_MIN_PACKETS % REMOLO_FLOOR_EVERY == 0,
               "the floor's reading: a power of two of packets apart, the first on one");
_Static_assert(REMOLO_CHOOSER_DELAY_MAX_US >= REMOLO_DELAY_MAX_US, "the chooser's clamp reaches the seed's");
_Static_assert(((unsigned long long)REMOLO_CHOOSER_DELAY_MAX_US + REMOLO_CHOOSER_STALL_CAP_US +
               (unsigned long long)REMOLO_CHOOSER_WEIGHT_MAX * REMOLO_CHOOSER_STALL_CAP_US)
               << REMOLO_CHOOSER_SHIFT_MAX < (1ull << 63), "the chooser's discounted costs fit 64 bits");
_Static_assert(REMOLO_DEFAULT_DELAY_MIN_US <= REMOLO_DEFAULT_DELAY_START_US &&
               REMOLO_DEFAULT_DELAY_START_US <= REMOLO_DELAY_MAX_US, "default start delay inside the clamp");
_Static_assert(REMOLO_KEEP_MAX_US < REMOLO_STEP_RESET_US, "a clock step re-anchors before it rebases");
_Static_assert(REMOLO_LOST_SPAN_MAX_US <= 1000000u, "a recovered span is a segment: at most 1 s");
_Static_assert((unsigned long long)REMOLO_LOST_BOUND_DATAGRAMS * REMOLO_MAX_MOTION_Q8 < (1ull << 40),
	       "recovered motion stays far inside a segment's int64 total");
_Static_assert(REMOLO_SLEW_PERMILLE <= 1000 && REMOLO_CATCHUP_PERMILLE <= 1000, "stretch rates are fractions");
_Static_assert((REMOLO_RX_BUFS & (REMOLO_RX_BUFS - 1)) == 0, "buffer ring: power of two");
_Static_assert((REMOLO_OUTPUT_PIPE_BYTES & (REMOLO_OUTPUT_PIPE_BYTES - 1)) == 0,
	       "output pipe: a power of two");
_Static_assert(REMOLO_RX_BUFS <= 32768, "buffer ring entries: kernel limit 32768");
_Static_assert(REMOLO_HIST_LINEAR == 2 * REMOLO_HIST_SUB && REMOLO_HIST_SUB == 4,
               "histogram: the linear part ends where the first 4-bucket octave begins");
_Static_assert(REMOLO_HIST_BUCKETS > REMOLO_HIST_LINEAR &&
               (REMOLO_HIST_BUCKETS - REMOLO_HIST_LINEAR) % REMOLO_HIST_SUB == 0, "histogram: whole octaves");
_Static_assert((REMOLO_RX_CMDQ_CAP & (REMOLO_RX_CMDQ_CAP - 1)) == 0, "command ring: power of two");
_Static_assert((REMOLO_KEYQ_CAP & (REMOLO_KEYQ_CAP - 1)) == 0, "key ring: power of two");
_Static_assert(REMOLO_KEYQ_CAP >= REMOLO_KEYQ_TEXT_EVENTS, "the largest text fits the key queue");
_Static_assert(REMOLO_RX_CMDQ_CAP * REMOLO_RX_KEYS_PER_CMD >= REMOLO_KEYQ_CAP,
               "the command ring holds a whole key queue");
_Static_assert(REMOLO_TICK_NS_MIN * REMOLO_DRAIN_HZ_MAX == 1000000000u &&
               REMOLO_TICK_NS_MAX >= 1000000000u / REMOLO_DRAIN_HZ_MIN &&
               REMOLO_TICK_NS_MIN <= REMOLO_TICK_NS && REMOLO_TICK_NS <= REMOLO_TICK_NS_MAX &&
               REMOLO_TICK_HZ <= REMOLO_DRAIN_HZ_AUTO_MAX && REMOLO_DRAIN_HZ_AUTO_MAX <= REMOLO_DRAIN_HZ_MAX,
               "drain period bounds hold the default and auto's cap");
#endif

/* SPDX-License-Identifier: MIT */
/*
 * The playout core: play pointer movement on the receiver's clock, not on
 * arrival. Pure functions over caller-owned structs; time is passed in
 * (microseconds); no syscalls, no allocation.
 *
 *   packet(tx) --clock--> offset --delay--> slot = tx + offset + delay
 *                                    segment [slot, slot + interval)
 *   tick(now) integrates every started segment up to now -> integer deltas
 */
#ifndef REMOLO_PLAYOUT_H
#define REMOLO_PLAYOUT_H

#include <stdbool.h>
#include <stdint.h>
/* BTN_* and KEY_*: the codes the playout's buttons and keys carry. */
#include <linux/input-event-codes.h>
#include "remolo_limits.h"

/*
 * Tuning, with the design note's values as the seed (playout_config_seed).
 * ONE list of fields: the struct, playout_config_set's names and the field
 * listing are all generated from it, so a knob added here is settable by
 * name everywhere at once. Every field is uint32_t.
 *
 * - creep_ppm: offset creep between minima.
 * - gap_reset_us: silence that forgets the offset.
 * - step_reset_us: lateness that rebases the offset.
 * - window: latenesses kept, <= REMOLO_WINDOW_MAX.
 * - quantile_permille, delay_margin_us, delay_min_us, delay_max_us,
 *   delay_start_us: the delay is the window's quantile + margin, clamped.
 * - shrink_permille: the delay shrinks by this per packet.
 * - seg_min_us, seg_max_us: a packet's segment length bounds.
 * - late_min_us, late_max_us: a late packet's replay length bounds.
 * - idle_us: quiet time after which the drain timer may stop.
 * - seg_end_at_slot: 0 (the design note): a packet's segment starts at the
 *   slot and lasts the time since the previous packet, so the motion ends
 *   one sender frame after its slot. 1: it ends at the slot, starting no
 *   earlier than the arrival; the motion of [tx_prev, tx] plays over
 *   [slot_prev, slot] as it happened, one frame sooner.
 * - frame_max_us: 0 (the design note): a packet spreads over the whole time
 *   since the previous one, so the first packet after a pause spreads its
 *   single frame of motion over up to seg_max_us. Otherwise intervals
 *   between consecutive movement packets up to this long are sender frames,
 *   and a packet spreads over at most the latest one.
 * - rise_window_us: 0 (the design note): the offset only rises by creeping.
 *   Otherwise, every window of this length the offset rises to the smallest
 *   sample of the last two windows when that is higher: a route change or a
 *   sender clock stepped back is followed within two windows.
 * - slew_permille: 0 (the design note): every packet is placed at its slot
 *   with the current offset and delay, so a change of either shifts the
 *   segments (they overlap: a jump; or leave a gap: a stall), and a late
 *   packet replays over late_min_us..late_max_us. Otherwise the schedule is
 *   time-stretched: the delay as applied follows offset and delay changes by
 *   at most this fraction of the sender time elapsed, consecutive movement
 *   segments join end to start (so a change stretches them), and a late
 *   packet plays from its arrival at its own pace, not over
 *   late_min_us..late_max_us.
 * - catchup_permille (with slew_permille): a segment behind its schedule
 *   (late, or queued behind late ones) plays up to this much faster than it
 *   happened (1000 = twice as fast) until the backlog is gone: a hold is
 *   caught up by speeding up, never by a jump.
 * - stall_weight: 0 (the design note): the delay's target is the window's
 *   quantile + margin, growing at once and shrinking by shrink_permille.
 *   Otherwise the delay is chosen by replaying the recent past at a fixed
 *   set of candidate delays (chooser.c): each is charged its delay on
 *   every packet, the latency its catch-up adds, and stall_weight times
 *   the time the cursor would have stood waiting (a microsecond of stall
 *   costs what stall_weight microseconds of delay on one packet do); the
 *   least costly is used, clamped to [delay_min_us, delay_max_us]. The
 *   window, margin and shrink are not used then.
 * - choose_horizon_shift (with stall_weight): the costs are discounted by
 *   2^-shift per packet: a memory of about 2^shift packets.
 * - choose_hysteresis_permille (with stall_weight): a candidate replaces
 *   the one in use only when it costs less by this share.
 * - recall_permille: 0, off. Otherwise the chooser's zero-delay shadow
 *   (alone, without stall_weight) keeps the lateness of this sender's
 *   sessions (recall.c); with a usable memory loaded (chooser_recall) the
 *   session holds the delay that this share of the memory's packets
 *   exceed at no delay, within [delay_min_us, REMOLO_CHOOSER_DELAY_MAX_US],
 *   until its own packets read a quarter or four times that (chooser.c);
 *   then the window's delay, or the chooser's with stall_weight (delay.c).
 * - choose_floor: 0 or 1 (with stall_weight and recall_permille). 1: the
 *   chooser's pick is not used below the lesser of the window's target
 *   (quantile + margin over the last `window` packets, clamped to
 *   [delay_min_us, delay_max_us]) and this session's own reading at
 *   recall_permille (refreshed every REMOLO_FLOOR_EVERY packets, from
 *   REMOLO_FLOOR_MIN_PACKETS on; the window's alone before): where
 *   stalls recur, both read past the pick, and below the network's knee
 *   a longer delay costs nothing at the 95th percentile (delay.c).
 * - keep_max_us (with slew_permille): 0: the schedule keeps its place
 *   across any offset change up to step_reset_us. Otherwise an offset
 *   change larger than this is taken for a step of the sender's clock: the
 *   delay applies at once (a backlog is caught up by the stretch) instead
 *   of holding every packet that much longer, or leaving them that late,
 *   while the slew works it off.
 * - lost_span_max_us (with frame_max_us): motion a packet recovers for the
 *   datagrams lost just before it (the redundancy feature: pkt.lost) plays
 *   as a segment of its own over the lost datagrams' frames, right after
 *   the previous packet's, and ends where they would have; but it spreads
 *   over at most this long (0: no bound but their frames'). Without
 *   frame_max_us it joins the packet's own motion, which then spreads over
 *   the whole time since the previous packet anyway.
 */
#define PLAYOUT_CONFIG_FIELDS(X) \
	X(creep_ppm) \
	X(gap_reset_us) \
	X(step_reset_us) \
	X(window) \
	X(quantile_permille) \
	X(delay_margin_us) \
	X(delay_min_us) \
	X(delay_max_us) \
	X(delay_start_us) \
	X(shrink_permille) \
	X(seg_min_us) \
	X(seg_max_us) \
	X(late_min_us) \
	X(late_max_us) \
	X(idle_us) \
	X(seg_end_at_slot) \
	X(frame_max_us) \
	X(rise_window_us) \
	X(slew_permille) \
	X(catchup_permille) \
	X(stall_weight) \
	X(choose_horizon_shift) \
	X(choose_hysteresis_permille) \
	X(recall_permille) \
	X(choose_floor) \
	X(keep_max_us) \
	X(lost_span_max_us)

struct playout_config {
#define PLAYOUT_CONFIG_MEMBER(name) uint32_t name;
	PLAYOUT_CONFIG_FIELDS(PLAYOUT_CONFIG_MEMBER)
#undef PLAYOUT_CONFIG_MEMBER
};

enum {
#define PLAYOUT_CONFIG_COUNT_ONE(name) PLAYOUT_CONFIG_INDEX_##name,
	PLAYOUT_CONFIG_FIELDS(PLAYOUT_CONFIG_COUNT_ONE)
#undef PLAYOUT_CONFIG_COUNT_ONE
	PLAYOUT_CONFIG_FIELD_COUNT
};
_Static_assert(sizeof(struct playout_config) == PLAYOUT_CONFIG_FIELD_COUNT * sizeof(uint32_t),
	       "every config field is a uint32_t from the one list");

/* Config values above these are refused by playout_config_check. */
#define PLAYOUT_CFG_TIME_MAX_US   60000000u  /* any time knob: 60 s */
#define PLAYOUT_CFG_SEG_MAX_US    1000000u   /* segment lengths: 1 s */

enum playout_kind {
	PLAYOUT_KIND_MOTION = 1,
	PLAYOUT_KIND_SCROLL = 2,
	PLAYOUT_KIND_BUTTON = 3,
	PLAYOUT_KIND_HEARTBEAT = 4,
	/* Internal, not a datagram kind (wire.c refuses kind 5 as bad_kind):
	 * keys come from the control channel only. */
	PLAYOUT_KIND_KEY = 5,
	/* A gesture's state (remolo_wire.h, the gesture layout), or its end
	 * from the control channel (type PLAYOUT_GESTURE_END). */
	PLAYOUT_KIND_GESTURE = 6,
};

enum playout_gesture_type {
	/* Internal: the control channel's gesture end; carries no state. */
	PLAYOUT_GESTURE_END = 0,
	PLAYOUT_GESTURE_SWIPE = 1,      /* 3 or 4 fingers; scale 1, angle 0 */
	PLAYOUT_GESTURE_PINCH = 2,      /* 2 to 4 fingers */
};

/* The gesture's last state: its fingers lift once it has played. */
#define PLAYOUT_GESTURE_FLAG_LAST 0x01u

/* What a gesture packet carries besides its centroid offset (a, b). */
struct playout_gesture {
	int32_t scale_q16;          /* REMOLO_GESTURE_SCALE_ONE = 1 */
	int32_t angle_urad;         /* counter-clockwise on screen */
	uint8_t id;                 /* the sender's number for this gesture */
	uint8_t type;               /* enum playout_gesture_type */
	uint8_t fingers;
	uint8_t flags;              /* PLAYOUT_GESTURE_FLAG_* */
};

/* One decoded packet. Motion: a,b = dx,dy in Q8 px. Scroll: a,b =
 * vertical,horizontal in Q8 hi-res units (positive = up / right, as
 * REL_WHEEL and REL_HWHEEL). Button: code = BTN_*, down = 0/1. Key: code =
 * KEY_* (a key of the keyboard device, kbddev_has_key), down = 0/1.
 * Gesture: a,b = the centroid's offset since the gesture began, in
 * micrometres (x right, y down); the rest in g.
 *
 * lost_n, lost: on a session with the redundancy feature (remolo_wire.h),
 * a datagram of any kind says how many datagrams the counter skipped just
 * before it and what motion they carried, recovered from the running
 * totals: x, y (Q8 px) and vertical, horizontal (Q8 hi-res units). Zero
 * everywhere else; the playout plays it once, spread over the gap. */
struct playout_pkt {
	uint64_t tx_us;            /* sender clock */
	int32_t a, b;
	uint16_t code;
	uint8_t kind;
	uint8_t down;
	uint32_t lost_n;
	int32_t lost[4];
	struct playout_gesture g;
};

/* ---- clock offset ------------------------------------------------------- */
struct offset_est {
	int64_t offset_us;         /* receiver time - sender time, creeping minimum */
	uint64_t creep_rem;        /* creep remainder, ppm * us */
	uint64_t last_rx_us;
	bool valid;
	/* Windowed minimum (rise_window_us): this window's and the previous
	 * one's smallest sample. */
	uint64_t win_start_us;
	int64_t win_min;
	int64_t prev_min;
	bool win_open;
	bool prev_valid;
};

enum offset_event {
	OFFSET_EVENT_NONE = 0,
	OFFSET_EVENT_MINIMUM = 1,   /* a new fastest trip */
	OFFSET_EVENT_RESET = 2,     /* first packet, or after a long gap */
	OFFSET_EVENT_STEP = 3,      /* absurdly late: rebased */
	OFFSET_EVENT_RISE = 4,      /* the windowed minimum went up */
};

void offset_init(struct offset_est *c);
/* Feeds one arrival; returns enum offset_event and stores the packet's
 * lateness (>= 0) in *lateness_us. */
int offset_update(struct offset_est *c, const struct playout_config *cfg,
		 uint64_t rx_us, uint64_t tx_us, uint64_t *lateness_us);

/* ---- a returning sender (recall.c) -------------------------------------- */
/* The zero-delay shadow's lateness over a sender's sessions on one
 * network: what the receiver saves at a session's end and loads at the
 * next one's start (as 128 + 2 little-endian 32-bit words). */
struct recall {
	uint32_t bins[REMOLO_RECALL_BINS];  /* weight per 1 ms of lateness, (b-1, b] ms, aged */
	uint32_t moved;                     /* movement seen, 2^REMOLO_RECALL_UNIT_SHIFT us units, folded */
	uint32_t held_us;                   /* what the last session held; 0: none */
};

void recall_init(struct recall *r);
/* A packet's weight: its frame in 2^REMOLO_RECALL_UNIT_SHIFT us units
 * (up to REMOLO_RECALL_FRAME_MAX_US), at least 1. */
uint32_t recall_weight(uint32_t frame_us);
/* A movement count past 2^31 stepped back by 2^30 until below: a whole
 * number of agings, and still a usable memory. */
uint32_t recall_fold(uint64_t moved);
/* One packet's lateness at no delay, weighed by its frame; ages the bins
 * each 2^REMOLO_RECALL_AGE_SHIFT units of movement. */
void recall_add(struct recall *r, uint64_t behind_us, uint32_t frame_us);
/* The shortest delay (a bin's upper edge: bin b holds lateness in
 * (b - 1, b] ms) that less than `permille` of the weight is later than;
 * 0 when empty. */
uint32_t recall_delay_us(const struct recall *r, uint32_t permille);
/* Whether it holds enough movement to be held (REMOLO_RECALL_MIN_MOVED). */
bool recall_usable(const struct recall *r);
/* The memory `old` followed by a session's own packets (a memory that
 * started empty): `old` aged as that movement would have aged it. */
void recall_merge(struct recall *out, const struct recall *old, const struct recall *session);
/* The offset rose by by_us: every lateness is that much smaller. */
void recall_rebase(struct recall *r, uint64_t by_us);
/* Whether a memory read from a file is one recall_add could have made
 * (its weight bounded): the only check a loaded memory needs. */
bool recall_valid(const struct recall *r);

/* ---- delay chooser (chooser.c) ----------------------------------------- */
struct chooser {
	uint64_t cost[REMOLO_CHOOSER_CANDIDATES];   /* discounted cost, us of delay */
	uint64_t end_us[REMOLO_CHOOSER_CANDIDATES]; /* where each shadow schedule's motion ends */
	uint32_t pick;                              /* the candidate in use */
	uint64_t packets;
	/* With recall_permille: the memory loaded (chooser_recall), this
	 * session's packets, and the delay held from the memory while
	 * `holding`. */
	struct recall mem;
	struct recall own;
	uint32_t held_us;
	bool holding;
	/* With choose_floor: this session's own reading at recall_permille,
	 * UINT32_MAX until REMOLO_FLOOR_MIN_PACKETS. */
	uint32_t knee_us;
};

/* No history; the candidate nearest start_us in use. */
void chooser_init(struct chooser *c, uint32_t start_us);
/* Before the first packet: the memory of this sender's earlier sessions.
 * Once it is usable, the session holds recall_delay_us(recall_permille)
 * until its own packets overrule it. */
void chooser_recall(struct chooser *c, const struct playout_config *cfg, const struct recall *mem);
/* The offset rose by by_us (delay_rebase). */
void chooser_rebase(struct chooser *c, uint64_t by_us);
/* What to save at the session's end: the memory it was given (none once
 * its own packets overruled it) followed by its own packets. */
void chooser_recall_out(const struct chooser *c, struct recall *out);
/* One movement packet: its arrival, its zero-delay slot (sender time +
 * offset), its frame, and whether it continues the previous packet's
 * motion. Charges every candidate and may change the pick. */
void chooser_add(struct chooser *c, const struct playout_config *cfg, uint64_t rx_us, uint64_t ref_us,
		 uint32_t frame_us, bool joined);
/* The delay in use: the held one, or the pick. */
uint32_t chooser_delay_us(const struct chooser *c);
/* Candidate k's delay (0 beyond the set). */
uint32_t chooser_candidate_us(uint32_t k);

/* ---- delay -------------------------------------------------------------- */
struct delay_est {
	struct chooser chooser;             /* with stall_weight */
	uint32_t ring[REMOLO_WINDOW_MAX];   /* latenesses, arrival order */
	uint32_t sorted[REMOLO_WINDOW_MAX]; /* the same values, ascending */
	uint32_t count;
	uint32_t head;
	uint32_t delay_us;
	uint32_t target_us;
	/* With choose_floor the window is counted in 1 ms bins instead of
	 * sorted (delay.c): `q` is the bin of its quantile, `below` how many
	 * of its values lie in bins 0..q. */
	uint16_t bins[REMOLO_FLOOR_BINS];
	uint32_t q;
	uint32_t below;
};

void delay_init(struct delay_est *d, const struct playout_config *cfg);
/* Adds one lateness; returns the new delay. */
uint32_t delay_update(struct delay_est *d, const struct playout_config *cfg, uint64_t lateness_us);
/* The configured quantile of the window (nearest rank: the
 * ceil(q * n)-th smallest); 0 when empty. */
uint32_t delay_quantile(const struct delay_est *d, const struct playout_config *cfg);
/* The offset rose by by_us: every lateness in the window was measured
 * against the old offset and is by_us too high (floored at 0), and so is
 * whatever of the delay they caused: it drops by as much, not below the
 * new target. */
void delay_rebase(struct delay_est *d, const struct playout_config *cfg, uint64_t by_us);
/* With stall_weight: one movement packet for the chooser (chooser_add). */
void delay_observe(struct delay_est *d, const struct playout_config *cfg, uint64_t rx_us, uint64_t ref_us,
		   uint32_t frame_us, bool joined);

/* ---- segment queue ------------------------------------------------------ */
struct segq_seg {
	uint64_t start_us;
	int64_t total[2];          /* Q8 */
	int64_t done[2];           /* Q8 already emitted */
	uint32_t dur_us;
	uint8_t kind;              /* PLAYOUT_KIND_MOTION or _SCROLL */
	uint8_t finished;
	uint8_t begun;             /* a drain has integrated some of it */
};

struct segq {
	struct segq_seg seg[REMOLO_SEGQ_CAP];
	uint32_t head;             /* free-running; index with & mask */
	uint32_t tail;
	uint64_t tail_end_us;      /* latest end of anything queued */
	uint64_t began_us;         /* earliest start among the segments the last
				    * drain began, 0 if none: when the motion
				    * that drain first let out was due */
};

void segq_init(struct segq *q);
static inline uint32_t segq_len(const struct segq *q) { return q->tail - q->head; }
/* Queues a segment; when the ring is full the motion is merged into the
 * newest segment of the same kind (returns 1) instead of being lost. Returns
 * 0 when queued, -1 when it could not be placed at all (then it is left to
 * the caller, which applies it at once). */
int segq_push(struct segq *q, uint8_t kind, uint64_t start_us, uint32_t dur_us, int64_t a, int64_t b);
/* Integrates every started segment up to now: adds the newly due Q8 motion
 * to acc[0..1] (pointer) and acc[2..3] (wheel) and drops finished ones. */
void segq_drain(struct segq *q, uint64_t now_us, int64_t acc[4]);

/* ---- buttons ------------------------------------------------------------ */
struct btnq_event {
	uint64_t at_us;
	uint16_t code;
	uint8_t down;
};

/* Mouse buttons BTN_LEFT (0x110) .. BTN_TASK (0x117); other codes are
 * refused. */
#define PLAYOUT_BTN_FIRST 0x110
#define PLAYOUT_BTN_COUNT 8
_Static_assert(PLAYOUT_BTN_COUNT <= 8, "button state and masks are uint8_t");

struct btnq {
	struct btnq_event ev[REMOLO_BTNQ_CAP];
	uint32_t head, tail;
	uint64_t last_at_us;
	/* A flood that fills the ring collapses into the final state of each
	 * button, released after the ring: clicks may merge, buttons never
	 * stick. Bit i = button PLAYOUT_BTN_FIRST + i. */
	uint8_t overflow_mask;
	uint8_t overflow_down;
	uint8_t state;               /* as last emitted */
};

/* ---- keys (keyq.c) ------------------------------------------------------ */
/* Keyboard keys are evdev codes below PLAYOUT_KEY_LIMIT, where the mouse
 * buttons (BTN_MISC, 0x100) begin; which of them the keyboard device has
 * is kbddev_has_key's to say. State is a bit map over that range. */
#define PLAYOUT_KEY_LIMIT 256
#define PLAYOUT_KEY_WORDS (PLAYOUT_KEY_LIMIT / 64)
_Static_assert(PLAYOUT_KEY_LIMIT <= PLAYOUT_BTN_FIRST && PLAYOUT_KEY_LIMIT % 64 == 0,
	       "keys lie below the buttons, in whole 64-bit words");
/* Key changes one tick lets out. */
#define PLAYOUT_KEY_PER_TICK 16

/* A key change: pushed in a batch (playout_push_keys) or let out by a tick. */
struct playout_key {
	uint16_t code;
	uint8_t down;
};

/* Why a key event was refused at push (never queued). Each refusal leaves
 * the session's key state as it was, so no refusal can leave a key held. */
enum playout_key_refusal {
	PLAYOUT_KEY_REFUSED_NONE = 0,
	PLAYOUT_KEY_REFUSED_HELD = 1,       /* a press of a key the session holds */
	PLAYOUT_KEY_REFUSED_NOT_HELD = 2,   /* a release of a key it does not hold */
	PLAYOUT_KEY_REFUSED_UNKNOWN = 3,    /* a code the keyboard device does not have */
	PLAYOUT_KEY_REFUSED_FLOOD = 4,      /* a press (or a whole batch) the
					     * queue has no room for (keyq_room) */
	PLAYOUT_KEY_REFUSED_COUNT = 5,
};

/* Queued key events keep their order; times only grow along the ring, so
 * each event stores its time as the gap after the previous one. */
struct keyq_event {
	uint32_t gap_us;           /* after the previous event (the first: 0) */
	uint16_t code;
	uint8_t down;
	uint8_t pad;
};
_Static_assert(sizeof(struct keyq_event) == 8, "a queued key event is 8 bytes");

struct keyq {
	struct keyq_event ev[REMOLO_KEYQ_CAP];
	uint32_t head, tail;       /* free-running; index with & mask */
	uint64_t head_at_us;       /* when the event at head is due */
	uint64_t last_at_us;       /* when the newest queued event is due */
	/* The session's intended state: every press and release pushed and
	 * not refused, in push order. A press of a key down here or a
	 * release of a key up here is refused. */
	uint64_t want[PLAYOUT_KEY_WORDS];
	uint64_t state[PLAYOUT_KEY_WORDS];   /* as last let out */
	/* Overflow: releases that found the ring full (or releases already
	 * pending) are folded here and let out once the ring has drained,
	 * so a full queue never makes a key stick. */
	uint64_t release[PLAYOUT_KEY_WORDS];
	bool releasing;            /* some bit of release[] is set */
};

void keyq_init(struct keyq *q);
static inline uint32_t keyq_len(const struct keyq *q) { return q->tail - q->head; }
/* Key changes the ring can still take with a place kept for the release
 * of every key wanted down: REMOLO_KEYQ_CAP - queued - wanted down, 0 while
 * folded releases are pending. Each press uses 2 (itself and its release's
 * place), each release none (its place was kept), so a batch with p
 * presses is taken whole when 2p <= keyq_room. */
uint32_t keyq_room(const struct keyq *q);
/* The evdev KEY_* codes a sender may press: the keyboard device has exactly
 * these (kbddev.c enables them), and the key queue refuses any other code
 * (PLAYOUT_KEY_REFUSED_UNKNOWN). keyset.c lists them and why some are left
 * out (power and radio keys). */
bool playout_has_key(uint16_t code);
/* Why a push of this change would be refused: enum playout_key_refusal.
 * A press needs keyq_room >= 2 (itself and its release). */
int keyq_check(const struct keyq *q, uint16_t code, uint8_t down);
/* Queues a change keyq_check accepted, due at at_us (or after the newest
 * queued event: order is kept). Returns 0 when queued, 1 when a release was
 * folded into the overflow release set. */
int keyq_push(struct keyq *q, uint64_t at_us, uint16_t code, uint8_t down);
/* Lets out due changes into out[*n..max) in queue order: none due after
 * now_us or after limit_us, one change per key code per call. Then, once
 * the ring is empty, the overflow releases. *first_us: when the first ring
 * event let out was due (untouched if none). Returns how many ring events
 * were let out. */
uint32_t keyq_drain(struct keyq *q, uint64_t now_us, uint64_t limit_us, struct playout_key *out,
		    uint32_t *n, uint32_t max, uint64_t *first_us);
/* When the event at head is due; false when the ring is empty. */
bool keyq_head_due(const struct keyq *q, uint64_t *at_us);
/* Session end: every queued event due at now_us, then every key released. */
void keyq_flush(struct keyq *q, uint64_t now_us);

/* ---- gestures (gesture.c) ---------------------------------------------- */
/* What the touchpad should show for one session: n fingers (0 = none)
 * around the centroid offset (x_um, y_um) from where the gesture began,
 * the row scaled and turned (a pinch). */
struct playout_touch {
	int32_t x_um, y_um;
	int32_t scale_q16;
	int32_t angle_urad;
	uint8_t fingers;
	uint8_t type;               /* enum playout_gesture_type, 0 when lifted */
};

/* One queued state: the gesture moves from the state before it to `to`
 * over [start_us, start_us + dur_us). */
struct gtrack_seg {
	uint64_t start_us;
	uint32_t dur_us;
	int32_t to[4];              /* x_um, y_um, scale_q16, angle_urad */
	uint8_t id, type, fingers, flags;
};

/*
 * A session's gesture track. The push side (gtrack_push) decides what a
 * state means from the ids it has seen: a new id begins a gesture (ending
 * the one open), the last state or the control channel's end ends it, and
 * an id that ended stays ended. The play side (gtrack_drain) moves the
 * shown state along the queued segments on the drain clock, as motion
 * segments are integrated: a gesture is spread and timed like a stroke.
 */
struct gtrack {
	struct gtrack_seg seg[REMOLO_GESTQ_CAP];
	uint32_t head, tail;        /* free-running; index with & mask */
	/* push side */
	uint64_t last_rx_us;        /* the open gesture's latest state arrived */
	uint8_t open_id;
	uint8_t ended_id;
	bool open;                  /* a gesture has begun and not ended */
	bool ended_valid;
	/* play side */
	struct playout_touch shown; /* as last let out */
	int32_t from[4];            /* the state the head segment starts from */
	uint8_t shown_id;
	bool lift_next;             /* the last state has played: lift next tick */
	bool lift_now;              /* a flush: lift at this drain's end */
};

void gtrack_init(struct gtrack *t);
/* Queues a gesture state or end (kind PLAYOUT_KIND_GESTURE) that arrived
 * at rx_us, to play over [start_us, start_us + dur_us). Returns
 * PLAYOUT_PUSH_ON_TIME, PLAYOUT_PUSH_MERGED (joined the newest state of a
 * full ring) or PLAYOUT_PUSH_REJECTED (an ended gesture's state, or a full
 * ring that held nothing of this gesture to join). *began: it began a
 * gesture. */
int gtrack_push(struct gtrack *t, uint64_t rx_us, const struct playout_pkt *pkt, uint64_t start_us,
		uint32_t dur_us, bool *began);
/* Plays up to now_us into *touch; true when the shown state changed. A
 * gesture not renewed for REMOLO_GESTURE_STALE_US ends here (*timed_out). */
bool gtrack_drain(struct gtrack *t, uint64_t now_us, struct playout_touch *touch, bool *timed_out);
/* Everything queued is due now, then the fingers lift (session end). */
void gtrack_flush(struct gtrack *t, uint64_t now_us);
/* Nothing queued and no finger down. */
static inline bool gtrack_idle(const struct gtrack *t)
{
	return t->head == t->tail && t->shown.fingers == 0 && !t->open;
}

/* ---- the whole receiver-side playout ------------------------------------ */
#define PLAYOUT_BTN_PER_TICK 8
/* playout_flush's release of every button then fits one tick. */
_Static_assert(PLAYOUT_BTN_PER_TICK >= PLAYOUT_BTN_COUNT, "a tick can release every button");

struct playout_btn {
	uint16_t code;
	uint8_t down;
};

struct playout_out {
	int32_t dx, dy;              /* REL_X, REL_Y */
	int32_t wheel, hwheel;       /* REL_WHEEL, REL_HWHEEL (notches) */
	int32_t wheel_hires, hwheel_hires; /* REL_*_HI_RES (1/120 notch) */
	uint32_t nbtn;
	struct playout_btn btn[PLAYOUT_BTN_PER_TICK];
	uint32_t nkey;               /* key changes, for the keyboard device */
	struct playout_key key[PLAYOUT_KEY_PER_TICK];
	struct playout_touch touch;  /* the touchpad's state (gestures) */
	bool touch_changed;          /* touch differs from the last tick's */
	bool touch_timed_out;        /* a gesture ended by REMOLO_GESTURE_STALE_US */
	bool idle;                   /* nothing queued, last motion >= idle_us old */
	uint64_t due_us;             /* when the earliest segment or button this
				      * tick let out for the first time was due,
				      * 0 if none (the loop's due-to-write figure) */
};

struct playout_stats {
	uint64_t packets;
	uint64_t late;
	uint64_t merged;             /* segments merged because the ring was full */
	uint64_t forced;             /* applied at once: no segment could hold it */
	uint64_t btn_collapsed;      /* button events folded by a full ring */
	uint64_t rejected;           /* unknown kind or button code */
	uint64_t clamped;            /* deltas over the single-packet bound (and
				      * recovered motion over its bound) */
	uint64_t recovered;          /* packets that carried motion of lost ones */
	uint64_t clock_resets;
	uint64_t clock_steps;
	uint64_t keys;               /* key changes let out */
	uint64_t key_refused[PLAYOUT_KEY_REFUSED_COUNT]; /* by enum playout_key_refusal */
	uint64_t key_folded;         /* releases folded by a full key queue */
	uint64_t gestures;           /* gestures begun */
	uint64_t gesture_states;     /* gesture states and ends taken */
	uint64_t gesture_refused;    /* states of ended gestures, or no room */
	uint64_t gesture_timeouts;   /* gestures ended by REMOLO_GESTURE_STALE_US */
};

enum playout_push_result {
	PLAYOUT_PUSH_ON_TIME = 0,
	PLAYOUT_PUSH_LATE = 1,
	PLAYOUT_PUSH_MERGED = 2,
	PLAYOUT_PUSH_FORCED = 3,
	PLAYOUT_PUSH_REJECTED = 4,
	/* A key refused: PLAYOUT_PUSH_REJECTED + enum playout_key_refusal. */
	PLAYOUT_PUSH_KEY_HELD = 5,
	PLAYOUT_PUSH_KEY_NOT_HELD = 6,
	PLAYOUT_PUSH_KEY_UNKNOWN = 7,
	PLAYOUT_PUSH_KEY_FLOOD = 8,
};
_Static_assert(PLAYOUT_PUSH_KEY_FLOOD == PLAYOUT_PUSH_REJECTED + PLAYOUT_KEY_REFUSED_FLOOD,
	       "key refusals follow PLAYOUT_PUSH_REJECTED in the same order");

/* Where one packet's motion plays to, by its sender time: a late key or
 * button goes after the motion sent at or before it, not after motion the
 * sender sent later (playout.c, motion_end_by). */
struct playout_mark {
	uint64_t tx_us;
	uint64_t end_us;
};

struct playout {
	struct playout_config cfg;
	struct offset_est clock;
	struct delay_est delay;
	struct segq q;
	struct btnq b;
	struct keyq k;
	struct gtrack g;
	int64_t acc[4];              /* Q8 remainders: x, y, wheel, hwheel */
	int32_t notch_acc[2];        /* hi-res units not yet a legacy notch */
	uint64_t prev_tx_us;
	uint32_t frame_us;           /* latest sender frame (frame_max_us), 0 = none yet */
	bool prev_move;              /* the previous packet carried movement */
	uint64_t last_now_us;
	uint64_t last_activity_us;
	bool have_prev;
	/* Time-stretched schedule (slew_permille): the delay as applied,
	 * relative to the current offset, and where the latest movement
	 * segment ends. */
	int64_t applied_us;
	uint64_t move_end_us;
	uint64_t move_due_us;        /* where its slot said it should end */
	bool have_applied;
	/* When the latest pushed movement is fully due (its segment's end, the
	 * merged tail, or the next tick): what the lab measures latency by. */
	uint64_t last_due_us;
	bool last_due_strict;        /* due only at a tick after last_due_us */
	/* Where the latest recovered motion plays (pkt.lost), for the lab. */
	uint64_t lost_start_us;
	uint64_t lost_end_us;
	/* The latest REMOLO_MARKS_CAP motion placements (marks[0..marks_len),
	 * in no order: marks_next is where the next one goes). Marks
	 * overwritten are summed up as the latest sender time and the latest
	 * end among them; marks_floor_us is where all motion queued before the
	 * marks were last cleared (a clock reset or step, a flush) plays to. */
	struct playout_mark marks[REMOLO_MARKS_CAP];
	uint32_t marks_len;          /* <= REMOLO_MARKS_CAP */
	uint32_t marks_next;         /* < REMOLO_MARKS_CAP */
	bool marks_forgot;
	uint64_t forgot_tx_us;
	uint64_t forgot_end_us;
	uint64_t marks_floor_us;
	struct playout_stats stats;
};

/* The design note's policy, exactly (the REMOLO_* constants). */
void playout_config_seed(struct playout_config *cfg);
/* The policy the receiver runs: the seed plus measured improvements. */
void playout_config_default(struct playout_config *cfg);
/* 0, or -EINVAL when a value is out of range. */
int playout_config_check(const struct playout_config *cfg);
/* Sets one field by its name in PLAYOUT_CONFIG_FIELDS. 0, -ENOENT for an
 * unknown name, -ERANGE for a value outside uint32_t. The result may still
 * break a rule: playout_config_problem says which. */
int playout_config_set(struct playout_config *cfg, const char *name, int64_t value);
/* The i-th field's name in list order, NULL past the end. */
const char *playout_config_field(uint32_t i);
/* NULL when valid, else which rule the first bad value breaks (static text). */
const char *playout_config_problem(const struct playout_config *cfg);

/* cfg NULL = defaults. Returns 0 or -EINVAL. */
int playout_init(struct playout *p, const struct playout_config *cfg);
/* Feeds one packet that arrived at rx_us. Returns enum playout_push_result. */
int playout_push(struct playout *p, uint64_t rx_us, const struct playout_pkt *pkt);
/* Feeds n key changes with one sender time (a text's keys): checked and
 * queued in order, at the one slot that time gets (the clock is fed once).
 * Adds each refusal to refused[reason] (the caller zeroes it; may be NULL).
 * Returns how many were accepted (queued or folded). */
uint32_t playout_push_keys(struct playout *p, uint64_t rx_us, uint64_t tx_us, const struct playout_key *keys,
			   uint32_t n, uint32_t refused[PLAYOUT_KEY_REFUSED_COUNT]);
/* Whether a batch of `changes` key changes (this push and those that
 * continue it) that needs `need` places (2 per press in it: keyq_room)
 * fits the key queue now; if not, counts every one of its changes refused
 * as a flood (stats and refused[], which may be NULL) and feeds nothing. */
bool playout_keys_fit(struct playout *p, uint32_t need, uint32_t changes,
		      uint32_t refused[PLAYOUT_KEY_REFUSED_COUNT]);
/* One drain tick: everything due up to now_us, as integers. */
void playout_tick(struct playout *p, uint64_t now_us, struct playout_out *out);
/* Releases what is still held: every queued motion, button and key is due
 * now, then every button and key is released. For the end of a session:
 * nothing is lost and nothing sticks. */
void playout_flush(struct playout *p, uint64_t now_us);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * The gesture side of the output: a uinput multitouch touchpad, "Remolo
 * touchpad", created with libevdev.
 *
 * Neither the portal nor libei can inject a gesture (a swipe, a pinch);
 * a touchpad can, since libinput turns its touches into
 * GESTURE_SWIPE_* and GESTURE_PINCH_* events for every compositor and for
 * X11. Pointer motion and scrolling stay on the pointer device
 * (remolo_ptrdev.h), so the sender's curve is applied once: this device
 * only ever carries three or more fingers, or two in a pinch.
 *
 * A frame is the fingers' positions (struct tpdev_touches); tpdev_write
 * writes what changed since the last frame that reached the kernel as one
 * write() ending in SYN_REPORT (type B multitouch protocol,
 * Documentation/input/multi-touch-protocol.rst). Fingers sit in slots
 * 0..n-1. Kernel-touching functions return >= 0 or -errno.
 *
 * This header stays free of libevdev headers (Swift imports it).
 */
#ifndef REMOLO_TPDEV_H
#define REMOLO_TPDEV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/input.h>

struct libevdev;
struct libevdev_uinput;

/* Default device name; also what udev rules and tests match on. */
#define REMOLO_TPDEV_NAME         "Remolo touchpad"
/* Slots the device has; BTN_TOOL_QUINTTAP says five or more fingers. */
#define REMOLO_TPDEV_SLOTS        5
/* Fingers a frame may put down: four-finger swipes are the most a desktop
 * binds (GNOME, KDE). */
#define REMOLO_TPDEV_FINGERS_MAX  4
/*
 * The pad's size and resolution. libinput works in millimetres (its
 * gesture and jump thresholds are in mm), so the resolution must be set
 * for them to mean what they say; 120 x 80 mm is a large laptop pad,
 * where a whole swipe fits from the middle.
 */
#define REMOLO_TPDEV_WIDTH_MM     120
#define REMOLO_TPDEV_HEIGHT_MM    80
#define REMOLO_TPDEV_UNITS_PER_MM 40
/* Plain numbers, so Swift can import them (asserted below). */
#define REMOLO_TPDEV_MAX_X        4799
#define REMOLO_TPDEV_MAX_Y        3199
/* How far apart fingers are laid out in a row (tpdev_layout): a hand's
 * fingertips on a pad. */
#define REMOLO_TPDEV_SPACING_MM   18
/*
 * A frame: per slot ABS_MT_SLOT, ABS_MT_TRACKING_ID, ABS_MT_POSITION_X/Y;
 * then ABS_X/Y (the first finger, single-touch emulation), BTN_TOUCH, the
 * old and the new BTN_TOOL_*; SYN_REPORT.
 */
#define REMOLO_TPDEV_FRAME_MAX    26

_Static_assert(REMOLO_TPDEV_MAX_X == REMOLO_TPDEV_WIDTH_MM * REMOLO_TPDEV_UNITS_PER_MM - 1, "the pad's width");
_Static_assert(REMOLO_TPDEV_MAX_Y == REMOLO_TPDEV_HEIGHT_MM * REMOLO_TPDEV_UNITS_PER_MM - 1, "the pad's height");
_Static_assert(REMOLO_TPDEV_FRAME_MAX == 4 * REMOLO_TPDEV_SLOTS + 2 + 3 + 1, "the largest frame fits");

_Static_assert(REMOLO_TPDEV_FINGERS_MAX <= REMOLO_TPDEV_SLOTS, "every finger has a slot");
_Static_assert(REMOLO_TPDEV_FINGERS_MAX <= 5, "BTN_TOOL_* names at most five fingers");

/* What the pad should show: n fingers (0 = none), finger i in slot i at
 * (x[i], y[i]) in device units, 0..REMOLO_TPDEV_MAX_X/Y. */
struct tpdev_touches {
	uint8_t n;
	int32_t x[REMOLO_TPDEV_SLOTS];
	int32_t y[REMOLO_TPDEV_SLOTS];
};

struct tpdev {
	struct libevdev *dev;
	struct libevdev_uinput *uidev;
	int fd;                      /* the uinput fd, owned by uidev; or the
				      * caller's fd (fd mode, uidev NULL); -1
				      * when not initialised */
	struct tpdev_touches shown;  /* what the kernel has: the last frame written */
	int32_t id[REMOLO_TPDEV_SLOTS];  /* tracking id of each slot's finger */
	int32_t next_id;
	struct input_event frame[REMOLO_TPDEV_FRAME_MAX];
};

/*
 * Creates the device (name NULL = REMOLO_TPDEV_NAME). Returns 0 or -errno:
 * -ENOENT when /dev/uinput does not exist, -EACCES when it may not be
 * opened. On failure *d is left deinitialised; tpdev_deinit is harmless.
 */
int tpdev_init(struct tpdev *d, const char *name);

/* The same frames to a file descriptor the caller owns (a socket pair in
 * the host tests); no uinput. 0, or -EBADF when fd is not open. */
int tpdev_init_fd(struct tpdev *d, int fd);

/*
 * Lays out n fingers (1..REMOLO_TPDEV_FINGERS_MAX; more are clamped) in a
 * row REMOLO_TPDEV_SPACING_MM apart around the centroid (cx, cy), the row
 * scaled by scale (a pinch: 1 at its start) and turned by angle radians
 * (counter-clockwise on screen, y down). Positions are clamped to the pad,
 * so a centroid near an edge shrinks the row there. Pure.
 */
void tpdev_layout(struct tpdev_touches *t, unsigned int n, double cx, double cy, double scale, double angle);

/*
 * Encodes the change from *from to *to into ev[0..cap): fingers lifted
 * (tracking id -1), fingers put down (a new tracking id from *next_id),
 * positions that moved, the single-touch axes, BTN_TOUCH and BTN_TOOL_*,
 * then SYN_REPORT. Returns the number of events, 0 when nothing changed,
 * or -EINVAL (n over REMOLO_TPDEV_FINGERS_MAX, a position off the pad,
 * cap below REMOLO_TPDEV_FRAME_MAX). ids and *next_id are updated. Pure.
 */
int tpdev_encode(struct input_event *ev, size_t cap, const struct tpdev_touches *from,
		 const struct tpdev_touches *to, int32_t ids[REMOLO_TPDEV_SLOTS], int32_t *next_id);

/*
 * Writes the change to *t as one write(). Returns the bytes written, 0
 * when nothing changed, or -errno. What counts as shown is only what
 * reached the kernel: after a failed write the next call writes the whole
 * difference again, so a lift is never lost.
 */
int tpdev_write(struct tpdev *d, const struct tpdev_touches *t);

/* Lifts every finger in one frame. Bytes written, 0 when none was down,
 * or -errno. */
int tpdev_lift(struct tpdev *d);

/* Whether any finger is down as far as the kernel was told. */
static inline bool tpdev_touching(const struct tpdev *d) { return d->shown.n != 0; }

/* /dev/input/eventN of the device, or NULL (evdev not loaded, fd mode). */
const char *tpdev_devnode(const struct tpdev *d);

/* Lifts every finger, then destroys the device. Safe to call twice. */
void tpdev_deinit(struct tpdev *d);

#endif

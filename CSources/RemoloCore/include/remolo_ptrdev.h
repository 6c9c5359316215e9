/* SPDX-License-Identifier: MIT */
/*
 * The output side: a uinput pointer device, created with libevdev.
 *
 * One drain tick (struct playout_out) becomes one frame of input events
 * written with exactly one write() that ends in SYN_REPORT, so a reader never
 * sees half a tick. Kernel-touching functions return >= 0 or -errno.
 *
 * The same device can write to any fd the caller owns instead
 * (ptrdev_init_fd): the receive loop's host tests and the bench run the
 * product's own write and button-reconcile code, minus uinput itself.
 *
 * This header stays free of libevdev and liburing headers (Swift imports it;
 * see platform notes): libevdev types are only forward-declared.
 */
#ifndef REMOLO_PTRDEV_H
#define REMOLO_PTRDEV_H

#include <stddef.h>
#include <stdint.h>
#include <linux/input.h>
#include "remolo_playout.h"

struct libevdev;
struct libevdev_uinput;

/* Relative axes a frame can carry: REL_X, REL_Y, REL_WHEEL, REL_HWHEEL,
 * REL_WHEEL_HI_RES, REL_HWHEEL_HI_RES. */
#define REMOLO_PTRDEV_AXES        6
/*
 * A frame: the axes, then each button event. A button that changes twice in
 * one tick (a fast click) would cancel out inside one SYN frame, so it starts
 * a new frame: at worst one SYN_REPORT per button event. The last event is
 * always SYN_REPORT.
 */
#define REMOLO_PTRDEV_FRAME_MAX   22  /* a plain number, so Swift can import it */
/* Default device name; also what udev rules and tests match on. */
#define REMOLO_PTRDEV_NAME        "Remolo pointer"

_Static_assert(REMOLO_PTRDEV_FRAME_MAX >=
	       REMOLO_PTRDEV_AXES + 2 * (sizeof(((struct playout_out *)0)->btn) /
					 sizeof(((struct playout_out *)0)->btn[0])),
	       "a full playout_out frame fits in one write");
/* The output adapter's pipe takes REMOLO_OUTPUT_STALL_MS of frames, each as
 * large as a frame can be (remolo_limits.h). */
_Static_assert((unsigned long long)REMOLO_OUTPUT_PIPE_BYTES >=
	       (unsigned long long)REMOLO_OUTPUT_STALL_MS * REMOLO_TICK_HZ / 1000u *
	       REMOLO_PTRDEV_FRAME_MAX * sizeof(struct input_event),
	       "the output pipe holds a stalled adapter's frames");
/* Held buttons are a bit mask over the playout's button range. */
_Static_assert(PLAYOUT_BTN_COUNT <= 8, "button mask is 8 bits");

struct ptrdev {
	struct libevdev *dev;
	struct libevdev_uinput *uidev;
	int fd;                      /* the uinput fd, owned by uidev; or the
				      * caller's fd (fd mode, uidev NULL); -1
				      * when not initialised */
	uint8_t held;                /* bit i: button PLAYOUT_BTN_FIRST + i is down */
	uint8_t want;                /* the same, as the caller last asked for */
	struct input_event frame[REMOLO_PTRDEV_FRAME_MAX];
};

/*
 * Creates the device (name NULL = REMOLO_PTRDEV_NAME). Returns 0 or -errno:
 * -ENOENT when /dev/uinput does not exist (module not loaded), -EACCES when
 * it may not be opened (udev rule / group). On failure *d is left
 * deinitialised and ptrdev_deinit on it is harmless.
 */
int ptrdev_init(struct ptrdev *d, const char *name);

/*
 * The same device over a file descriptor the caller owns (a pipe, a
 * SOCK_SEQPACKET socket, /dev/null): the same frames, one write() each, and
 * the same button bookkeeping; no uinput. Returns 0, or -EBADF when fd is
 * not open. ptrdev_deinit releases held buttons to fd but does not close it.
 */
int ptrdev_init_fd(struct ptrdev *d, int fd);

/*
 * Encodes one tick into ev[0..cap): motion, wheel (hi-res, then legacy
 * notches), then buttons, ending in SYN_REPORT. Returns the number of events,
 * 0 for an empty tick, or -EINVAL for a button code outside
 * PLAYOUT_BTN_FIRST..+PLAYOUT_BTN_COUNT, nbtn over PLAYOUT_BTN_PER_TICK, or a
 * cap below REMOLO_PTRDEV_FRAME_MAX. *held is updated to the button state
 * after the frame. Pure: no syscalls.
 */
int ptrdev_encode(struct input_event *ev, size_t cap, const struct playout_out *out,
		  uint8_t *held);

/*
 * Writes one tick as one write(). Returns the bytes written, 0 for an empty
 * tick (nothing is written), or -errno (-EINVAL as ptrdev_encode, -ENODEV
 * after deinit). The buttons asked for count even when the write fails: the
 * next call first writes the difference (a release never gets lost).
 */
int ptrdev_write(struct ptrdev *d, const struct playout_out *out);

/* /dev/input/eventN of the device, or NULL if the kernel has not made one
 * (evdev not loaded) or in fd mode. Valid until ptrdev_deinit. */
const char *ptrdev_devnode(const struct ptrdev *d);

/* Sets out->btn[i]. i must be < PLAYOUT_BTN_PER_TICK. */
static inline void ptrdev_out_set_btn(struct playout_out *out, uint32_t i,
				      uint16_t code, uint8_t down)
{
	out->btn[i].code = code;
	out->btn[i].down = down;
}

/* Releases every held button in one frame. Returns the bytes written, 0
 * when nothing is held, or -errno. */
int ptrdev_release(struct ptrdev *d);

/* Releases every held button (no button stays stuck in the compositor),
 * then destroys the device. Safe to call twice, or after a failed init. */
void ptrdev_deinit(struct ptrdev *d);

#endif

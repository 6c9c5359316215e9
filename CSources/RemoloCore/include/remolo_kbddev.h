/* SPDX-License-Identifier: MIT */
/*
 * The keyboard output: a uinput keyboard, "Remolo keyboard", created with
 * libevdev beside the pointer (remolo_ptrdev.h), with every key of a
 * standard 105-key keyboard plus the international, media and volume keys
 * (playout_has_key lists them: keyset.c).
 *
 * One drain tick's key changes (struct playout_out's key[]) become one
 * frame written with one write() ending in SYN_REPORT. A key that changes
 * twice in one frame (two sessions, one releasing as the other presses)
 * starts a new SYN frame, as the pointer does for buttons. The device
 * advertises EV_REP: the kernel (and the desktop) repeat a held key; the
 * sender sends presses and releases only.
 *
 * The same device can write to any fd the caller owns (kbddev_init_fd): the
 * tests' recording sinks see the keyboard's frames on the pointer's fd,
 * each frame its own write.
 *
 * Free of libevdev headers (Swift imports this one).
 */
#ifndef REMOLO_KBDDEV_H
#define REMOLO_KBDDEV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/input.h>
#include "remolo_playout.h"

struct libevdev;
struct libevdev_uinput;

/* A frame: every change of one tick, a SYN_REPORT before a key's second
 * change, and the closing SYN_REPORT. */
#define REMOLO_KBDDEV_FRAME_MAX   32  /* a plain number, so Swift can import it */
/* Default device name; also what udev rules and tests match on. */
#define REMOLO_KBDDEV_NAME        "Remolo keyboard"

_Static_assert(REMOLO_KBDDEV_FRAME_MAX >= 2 * PLAYOUT_KEY_PER_TICK,
	       "a full tick of key changes fits one write");

struct kbddev {
	struct libevdev *dev;
	struct libevdev_uinput *uidev;
	int fd;                      /* the uinput fd (owned by uidev), or the
				      * caller's fd (fd mode); -1 when not
				      * initialised */
	uint64_t held[PLAYOUT_KEY_WORDS]; /* down on the device, as written */
	uint64_t want[PLAYOUT_KEY_WORDS]; /* down as the caller last asked */
	uint64_t sysrq_dropped;      /* SysRq presses left out (Alt held) */
	struct input_event frame[REMOLO_KBDDEV_FRAME_MAX];
};

/*
 * True for a key the Remolo keyboard has (playout_has_key): the one list of keys the
 * receiver takes (a key outside it is refused as "unknown key"). Pure.
 */
bool kbddev_has_key(uint16_t code);

/*
 * Creates the device (name NULL = REMOLO_KBDDEV_NAME). 0 or -errno, as
 * ptrdev_init: -ENOENT without /dev/uinput, -EACCES without permission. On
 * failure *d is left deinitialised; kbddev_deinit on it is harmless.
 */
int kbddev_init(struct kbddev *d, const char *name);

/* The same device over the caller's fd (a pipe, a SOCK_SEQPACKET socket,
 * /dev/null). 0, or -EBADF when fd is not open. kbddev_deinit releases
 * held keys to fd but does not close it. */
int kbddev_init_fd(struct kbddev *d, int fd);

/*
 * Encodes key changes into ev[0..cap): each change as EV_KEY, a SYN_REPORT
 * before a code's second change, ending in SYN_REPORT. Returns the number
 * of events, 0 for none, or -EINVAL for a code kbddev_has_key refuses,
 * n over PLAYOUT_KEY_PER_TICK or cap under REMOLO_KBDDEV_FRAME_MAX. *held
 * is updated. Pure.
 */
int kbddev_encode(struct input_event *ev, size_t cap, const struct playout_key *keys, uint32_t n,
		  uint64_t held[PLAYOUT_KEY_WORDS]);

/*
 * Writes out->key[0..nkey) as one write() (the pointer fields are not the
 * keyboard's). Returns the bytes written, 0 when there is nothing to write,
 * or -errno (-EINVAL as kbddev_encode, -ENODEV after deinit). The keys
 * asked for count even when the write fails: the next call first writes
 * the difference, releases included, so no release is lost.
 *
 * Magic SysRq (Linux, drivers/tty/sysrq.c) acts on Alt+SysRq pressed on one
 * device, before any reader sees it (Alt+SysRq+B reboots). A SysRq press
 * while this device holds an Alt is left out (counted in sysrq_dropped):
 * no sender can reach the kernel's SysRq through it.
 */
int kbddev_write(struct kbddev *d, const struct playout_out *out);

/* Releases every held key (a frame per PLAYOUT_KEY_PER_TICK keys).
 * Returns the bytes written, 0 when none is held, or -errno. */
int kbddev_release(struct kbddev *d);

/* /dev/input/eventN of the device, or NULL (fd mode, or no evdev). */
const char *kbddev_devnode(const struct kbddev *d);

/* Releases held keys, then destroys the device. Safe twice or after a
 * failed init. */
void kbddev_deinit(struct kbddev *d);

#endif

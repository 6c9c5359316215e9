/* SPDX-License-Identifier: MIT */
/*
 * uinput pointer device (see remolo_ptrdev.h).
 *
 * libevdev creates the device (it knows the uinput ioctl dance across kernel
 * versions), but frames are written straight to the uinput fd: libevdev's
 * libevdev_uinput_write_event costs one write() per event, and a reader
 * could then wake up between events of one tick.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <libevdev/libevdev.h>
#include <libevdev/libevdev-uinput.h>

#include "remolo_ptrdev.h"
#include "evframe.h"

static const unsigned int rel_axes[REMOLO_PTRDEV_AXES] = {
	REL_X, REL_Y, REL_WHEEL, REL_HWHEEL, REL_WHEEL_HI_RES, REL_HWHEEL_HI_RES,
};

/* Frames go to the kernel as raw bytes, so struct input_event must be the
 * kernel's: two longs of time (zeroed; uinput stamps its own), then type,
 * code, value. On 32-bit ARM that is 16 bytes even when userspace has a
 * 64-bit time_t (linux/input.h switches to __kernel_ulong_t fields under
 * __USE_TIME_BITS64, Linux 5.0); a header sizing it by time_t would get
 * every write refused. */
_Static_assert(sizeof(struct input_event) == 2 * sizeof(long) + 8, "input_event: the kernel's layout");
_Static_assert(PLAYOUT_BTN_FIRST == BTN_LEFT, "playout buttons start at BTN_LEFT");
_Static_assert(PLAYOUT_BTN_FIRST + PLAYOUT_BTN_COUNT - 1 == BTN_TASK,
	       "playout buttons end at BTN_TASK");

int ptrdev_init(struct ptrdev *d, const char *name)
{
	unsigned int i;
	int ret;

	memset(d, 0, sizeof(*d));
	d->fd = -1;

	d->dev = evframe_describe(name ? name : REMOLO_PTRDEV_NAME, EVFRAME_PRODUCT_POINTER);
	if (!d->dev)
		return -ENOMEM;

	/* INPUT_PROP_POINTER plus REL_X/Y and BTN_LEFT is what libinput and
	 * udev's input_id take for a mouse. */
	ret = libevdev_enable_property(d->dev, INPUT_PROP_POINTER);
	for (i = 0; ret == 0 && i < REMOLO_PTRDEV_AXES; i++)
		ret = libevdev_enable_event_code(d->dev, EV_REL, rel_axes[i], NULL);
	for (i = 0; ret == 0 && i < PLAYOUT_BTN_COUNT; i++)
		ret = libevdev_enable_event_code(d->dev, EV_KEY, PLAYOUT_BTN_FIRST + i, NULL);

	ret = evframe_create(&d->dev, &d->uidev, ret);
	if (ret < 0)
		return ret;
	d->fd = ret;
	return 0;
}

int ptrdev_init_fd(struct ptrdev *d, int fd)
{
	memset(d, 0, sizeof(*d));
	d->fd = -1;
	if (evframe_check_fd(fd))
		return -EBADF;
	d->fd = fd;
	return 0;
}

int ptrdev_encode(struct input_event *ev, size_t cap, const struct playout_out *out,
		  uint8_t *held)
{
	uint8_t state = *held, touched = 0;
	int n = 0;
	uint32_t i;

	if (cap < REMOLO_PTRDEV_FRAME_MAX || out->nbtn > PLAYOUT_BTN_PER_TICK)
		return -EINVAL;
	for (i = 0; i < out->nbtn; i++) {
		if (out->btn[i].code < PLAYOUT_BTN_FIRST ||
		    out->btn[i].code >= PLAYOUT_BTN_FIRST + PLAYOUT_BTN_COUNT)
			return -EINVAL;
	}

	/* The kernel drops zero relative events; skipping them here keeps the
	 * frame what a reader will actually see. */
	if (out->dx)
		evframe_put(ev, &n, EV_REL, REL_X, out->dx);
	if (out->dy)
		evframe_put(ev, &n, EV_REL, REL_Y, out->dy);
	/* Hi-res first, then the legacy notch, as the kernel's HID driver
	 * orders them for a hi-res wheel. */
	if (out->wheel_hires)
		evframe_put(ev, &n, EV_REL, REL_WHEEL_HI_RES, out->wheel_hires);
	if (out->wheel)
		evframe_put(ev, &n, EV_REL, REL_WHEEL, out->wheel);
	if (out->hwheel_hires)
		evframe_put(ev, &n, EV_REL, REL_HWHEEL_HI_RES, out->hwheel_hires);
	if (out->hwheel)
		evframe_put(ev, &n, EV_REL, REL_HWHEEL, out->hwheel);

	/* Buttons come after motion, so a press lands where the pointer has
	 * moved to. A button already used in this frame closes it first:
	 * down and up inside one frame would be a click nobody sees. */
	for (i = 0; i < out->nbtn; i++) {
		uint8_t bit = (uint8_t)(1u << (out->btn[i].code - PLAYOUT_BTN_FIRST));

		if (touched & bit) {
			evframe_put(ev, &n, EV_SYN, SYN_REPORT, 0);
			touched = 0;
		}
		touched |= bit;
		evframe_put(ev, &n, EV_KEY, out->btn[i].code, out->btn[i].down ? 1 : 0);
		if (out->btn[i].down)
			state |= bit;
		else
			state &= (uint8_t)~bit;
	}

	if (n == 0)
		return 0;
	evframe_put(ev, &n, EV_SYN, SYN_REPORT, 0);
	*held = state;
	return n;
}

/* Brings the device's buttons to what the caller asked for. Needed after a
 * failed write: the playout emits each change once, so a lost release would
 * otherwise leave the button down until the device goes away. */
static int reconcile(struct ptrdev *d)
{
	struct playout_out fix;
	uint8_t held = d->held, diff = d->held ^ d->want;
	int n, ret;

	memset(&fix, 0, sizeof(fix));
	for (unsigned int i = 0; i < PLAYOUT_BTN_COUNT; i++) {
		if (!(diff & (1u << i)))
			continue;
		fix.btn[fix.nbtn].code = (uint16_t)(PLAYOUT_BTN_FIRST + i);
		fix.btn[fix.nbtn].down = !!(d->want & (1u << i));
		fix.nbtn++;
	}
	n = ptrdev_encode(d->frame, REMOLO_PTRDEV_FRAME_MAX, &fix, &held);
	if (n <= 0)
		return n;
	ret = evframe_write(d->fd, d->frame, n);
	if (ret > 0)
		d->held = held;
	return ret;
}

int ptrdev_write(struct ptrdev *d, const struct playout_out *out)
{
	uint8_t held;
	int n, ret;

	if (d->fd < 0)
		return -ENODEV;
	/* Recovery only (an extra write on the call after a failure): first
	 * bring the device back to what was asked for. */
	if (__builtin_expect(d->held != d->want, 0))
		(void)reconcile(d);
	held = d->held;
	n = ptrdev_encode(d->frame, REMOLO_PTRDEV_FRAME_MAX, out, &held);
	if (n <= 0)
		return n;
	/* The request stands whether or not it reaches the kernel. */
	for (uint32_t i = 0; i < out->nbtn; i++) {
		uint8_t bit = (uint8_t)(1u << (out->btn[i].code - PLAYOUT_BTN_FIRST));

		d->want = out->btn[i].down ? (uint8_t)(d->want | bit) : (uint8_t)(d->want & ~bit);
	}
	ret = evframe_write(d->fd, d->frame, n);
	/* Only what reached the kernel counts as held. */
	if (ret > 0)
		d->held = held;
	return ret;
}

const char *ptrdev_devnode(const struct ptrdev *d)
{
	if (!d->uidev)
		return NULL;
	return libevdev_uinput_get_devnode(d->uidev);
}

int ptrdev_release(struct ptrdev *d)
{
	if (d->fd < 0)
		return -ENODEV;
	d->want = 0;
	return d->held ? reconcile(d) : 0;
}

void ptrdev_deinit(struct ptrdev *d)
{
	/* Best effort: the kernel drops a destroyed device's keys too, but
	 * only an explicit release reaches every reader in order before the
	 * device goes away. */
	if (d->fd >= 0)
		(void)ptrdev_release(d);
	/* fd mode: the fd is the caller's to close. */
	if (d->uidev)
		libevdev_uinput_destroy(d->uidev);
	if (d->dev)
		libevdev_free(d->dev);
	d->uidev = NULL;
	d->dev = NULL;
	d->fd = -1;
	d->held = 0;
	d->want = 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * uinput multitouch touchpad (see remolo_tpdev.h).
 *
 * Like the pointer (ptrdev.c), libevdev creates the device and frames go
 * straight to the uinput fd as one write() each, so libinput never sees
 * half a frame: a frame with some fingers moved and others not would be
 * a pinch where the sender made a swipe.
 */
#include <errno.h>
#include <math.h>
#include <string.h>
#include <unistd.h>
#include <libevdev/libevdev.h>
#include <libevdev/libevdev-uinput.h>

#include "remolo_tpdev.h"
#include "evframe.h"

/* BTN_TOOL_* for 1..5 fingers: how a touchpad says how many touch it,
 * independent of its slots (linux/input-event-codes.h). */
static const unsigned int tools[5] = {
	BTN_TOOL_FINGER, BTN_TOOL_DOUBLETAP, BTN_TOOL_TRIPLETAP, BTN_TOOL_QUADTAP, BTN_TOOL_QUINTTAP,
};

/* The kernel's own tracking ids wrap at 0xffff (input_mt_new_trkid); a
 * reader only compares them with -1 and with each other. */
#define TRKID_MASK 0xffff

static int enable_abs(struct libevdev *dev, unsigned int code, int max)
{
	struct input_absinfo a = { .minimum = 0, .maximum = max };

	if (code == ABS_X || code == ABS_Y || code == ABS_MT_POSITION_X || code == ABS_MT_POSITION_Y)
		a.resolution = REMOLO_TPDEV_UNITS_PER_MM;
	return libevdev_enable_event_code(dev, EV_ABS, code, &a);
}

int tpdev_init(struct tpdev *d, const char *name)
{
	int ret;

	memset(d, 0, sizeof(*d));
	d->fd = -1;

	d->dev = evframe_describe(name ? name : REMOLO_TPDEV_NAME, EVFRAME_PRODUCT_TOUCHPAD);
	if (!d->dev)
		return -ENOMEM;

	/*
	 * A touchpad to udev's input_id (ABS_X/Y with BTN_TOOL_FINGER and no
	 * INPUT_PROP_DIRECT) and to libinput (INPUT_PROP_POINTER, BTN_TOUCH,
	 * more than one slot for gestures). A clickpad (INPUT_PROP_BUTTONPAD,
	 * BTN_LEFT only), as laptops' pads are now: libinput's soft-button
	 * and thumb zones lie along its bottom edge, which tpdev_layout's
	 * gestures stay clear of (they start at the pad's middle). The
	 * device never clicks. No fuzz (libinput would turn on hysteresis
	 * and eat small motion) and no pressure axis (contact is BTN_TOUCH
	 * and the BTN_TOOL_* count, as for pads without one).
	 */
	ret = libevdev_enable_property(d->dev, INPUT_PROP_POINTER);
	if (!ret)
		ret = libevdev_enable_property(d->dev, INPUT_PROP_BUTTONPAD);
	if (!ret)
		ret = libevdev_enable_event_code(d->dev, EV_KEY, BTN_LEFT, NULL);
	if (!ret)
		ret = libevdev_enable_event_code(d->dev, EV_KEY, BTN_TOUCH, NULL);
	for (unsigned int i = 0; !ret && i < 5; i++)
		ret = libevdev_enable_event_code(d->dev, EV_KEY, tools[i], NULL);
	if (!ret)
		ret = enable_abs(d->dev, ABS_X, REMOLO_TPDEV_MAX_X);
	if (!ret)
		ret = enable_abs(d->dev, ABS_Y, REMOLO_TPDEV_MAX_Y);
	if (!ret)
		ret = enable_abs(d->dev, ABS_MT_SLOT, REMOLO_TPDEV_SLOTS - 1);
	if (!ret)
		ret = enable_abs(d->dev, ABS_MT_TRACKING_ID, TRKID_MASK);
	if (!ret)
		ret = enable_abs(d->dev, ABS_MT_POSITION_X, REMOLO_TPDEV_MAX_X);
	if (!ret)
		ret = enable_abs(d->dev, ABS_MT_POSITION_Y, REMOLO_TPDEV_MAX_Y);

	ret = evframe_create(&d->dev, &d->uidev, ret);
	if (ret < 0)
		return ret;
	d->fd = ret;
	return 0;
}

int tpdev_init_fd(struct tpdev *d, int fd)
{
	memset(d, 0, sizeof(*d));
	d->fd = -1;
	if (evframe_check_fd(fd))
		return -EBADF;
	d->fd = fd;
	return 0;
}

static int32_t clamp(double v, int32_t max)
{
	if (!(v > 0))   /* also NaN */
		return 0;
	if (v >= max)
		return max;
	return (int32_t)lround(v);
}

void tpdev_layout(struct tpdev_touches *t, unsigned int n, double cx, double cy, double scale, double angle)
{
	double step = REMOLO_TPDEV_SPACING_MM * REMOLO_TPDEV_UNITS_PER_MM * scale;
	double c = cos(angle), s = sin(angle);

	if (n > REMOLO_TPDEV_FINGERS_MAX)
		n = REMOLO_TPDEV_FINGERS_MAX;
	memset(t, 0, sizeof(*t));
	t->n = (uint8_t)n;
	for (unsigned int i = 0; i < n; i++) {
		double off = ((double)i - (double)(n - 1) / 2.0) * step;

		/* y grows downwards: a counter-clockwise turn on screen lifts
		 * the row's right end. */
		t->x[i] = clamp(cx + off * c, REMOLO_TPDEV_MAX_X);
		t->y[i] = clamp(cy - off * s, REMOLO_TPDEV_MAX_Y);
	}
}

static bool valid(const struct tpdev_touches *t)
{
	if (__builtin_expect(t->n > REMOLO_TPDEV_FINGERS_MAX, 0))
		return false;
	for (unsigned int i = 0; i < t->n; i++) {
		if (__builtin_expect(t->x[i] < 0 || t->x[i] > REMOLO_TPDEV_MAX_X ||
				     t->y[i] < 0 || t->y[i] > REMOLO_TPDEV_MAX_Y, 0))
			return false;
	}
	return true;
}

int tpdev_encode(struct input_event *ev, size_t cap, const struct tpdev_touches *from,
		 const struct tpdev_touches *to, int32_t ids[REMOLO_TPDEV_SLOTS], int32_t *next_id)
{
	unsigned int slots = from->n > to->n ? from->n : to->n;
	int n = 0;

	if (cap < REMOLO_TPDEV_FRAME_MAX || !valid(from) || !valid(to))
		return -EINVAL;

	for (unsigned int i = 0; i < slots; i++) {
		bool was = i < from->n, is = i < to->n;
		bool mx = is && (!was || from->x[i] != to->x[i]);
		bool my = is && (!was || from->y[i] != to->y[i]);

		if (!(was != is || mx || my))
			continue;
		evframe_put(ev, &n, EV_ABS, ABS_MT_SLOT, (int)i);
		if (!is) {
			evframe_put(ev, &n, EV_ABS, ABS_MT_TRACKING_ID, -1);
			continue;
		}
		if (!was) {
			ids[i] = *next_id;
			*next_id = (*next_id + 1) & TRKID_MASK;
			evframe_put(ev, &n, EV_ABS, ABS_MT_TRACKING_ID, ids[i]);
		}
		if (mx)
			evframe_put(ev, &n, EV_ABS, ABS_MT_POSITION_X, to->x[i]);
		if (my)
			evframe_put(ev, &n, EV_ABS, ABS_MT_POSITION_Y, to->y[i]);
	}
	/* Single-touch emulation follows the first finger, as the kernel's
	 * input_mt_report_pointer_emulation does for drivers. */
	if (to->n && (!from->n || from->x[0] != to->x[0]))
		evframe_put(ev, &n, EV_ABS, ABS_X, to->x[0]);
	if (to->n && (!from->n || from->y[0] != to->y[0]))
		evframe_put(ev, &n, EV_ABS, ABS_Y, to->y[0]);
	if (!from->n != !to->n)
		evframe_put(ev, &n, EV_KEY, BTN_TOUCH, to->n ? 1 : 0);
	if (from->n != to->n) {
		if (from->n)
			evframe_put(ev, &n, EV_KEY, tools[from->n - 1], 0);
		if (to->n)
			evframe_put(ev, &n, EV_KEY, tools[to->n - 1], 1);
	}
	if (n == 0)
		return 0;
	evframe_put(ev, &n, EV_SYN, SYN_REPORT, 0);
	return n;
}

int tpdev_write(struct tpdev *d, const struct tpdev_touches *t)
{
	int32_t ids[REMOLO_TPDEV_SLOTS], next = d->next_id;
	int n, ret;

	if (d->fd < 0)
		return -ENODEV;
	memcpy(ids, d->id, sizeof(ids));
	n = tpdev_encode(d->frame, REMOLO_TPDEV_FRAME_MAX, &d->shown, t, ids, &next);
	if (n <= 0)
		return n;
	ret = evframe_write(d->fd, d->frame, n);
	/* Only what reached the kernel is shown: a failed lift is written
	 * again by the next call. */
	if (ret > 0) {
		d->shown = *t;
		memcpy(d->id, ids, sizeof(ids));
		d->next_id = next;
	}
	return ret;
}

int tpdev_lift(struct tpdev *d)
{
	struct tpdev_touches none;

	memset(&none, 0, sizeof(none));
	return tpdev_write(d, &none);
}

const char *tpdev_devnode(const struct tpdev *d)
{
	if (!d->uidev)
		return NULL;
	return libevdev_uinput_get_devnode(d->uidev);
}

void tpdev_deinit(struct tpdev *d)
{
	/* The kernel lifts a destroyed device's touches too, but only an
	 * explicit lift reaches every reader before the device goes. */
	if (d->fd >= 0)
		(void)tpdev_lift(d);
	if (d->uidev)
		libevdev_uinput_destroy(d->uidev);
	if (d->dev)
		libevdev_free(d->dev);
	d->uidev = NULL;
	d->dev = NULL;
	d->fd = -1;
	memset(&d->shown, 0, sizeof(d->shown));
}

/* SPDX-License-Identifier: MIT */
/*
 * The loop's touchpad (remolo_rx.h, RX_OP_TOUCHPAD): what each session's
 * gesture track shows (playout_out.touch) laid out as fingers and written
 * to the one touchpad (remolo_tpdev.h).
 *
 * One session's fingers hold the pad at a time: the session whose fingers
 * went down first owns it until they lift. Two senders' touches on one pad
 * would be one gesture of their fingers added up, which neither made. A
 * session that ends lifts its fingers in its last frame; if that write
 * fails, the loop keeps trying (rx_touch_orphan) and keeps its timer
 * running until it has gone through, so no finger stays down.
 */
#include <errno.h>
#include <string.h>

#include "rx_internal.h"

#define unlikely(x) __builtin_expect(!!(x), 0)

/* The pad's middle, where every gesture's centroid starts: clear of
 * libinput's edge and button zones (docs/gestures.md). */
#define PAD_MID_X ((REMOLO_TPDEV_MAX_X + 1) / 2.0)
#define PAD_MID_Y ((REMOLO_TPDEV_MAX_Y + 1) / 2.0)
#define UM_PER_UNIT (1000.0 / REMOLO_TPDEV_UNITS_PER_MM)
#define URAD 1e-6

int rx_touch_adopt(struct rx_loop *l, struct tpdev *tp)
{
	if (l->tp)
		return -EEXIST;
	if (!tp || tp->fd < 0)
		return -EINVAL;
	l->tp = tp;
	l->touch_owner = 0;
	l->st.touchpad = 1;
	return 0;
}

static void write_touches(struct rx_loop *l, const struct tpdev_touches *t)
{
	int ret = tpdev_write(l->tp, t);

	if (unlikely(ret < 0)) {
		l->st.touch_write_errors++;
		l->st.last_write_errno = (uint64_t)-ret;
	} else if (ret > 0) {
		l->st.touch_frames++;
	}
}

void rx_touch_tick(struct rx_loop *l, uint32_t slot, const struct playout_out *o)
{
	struct tpdev_touches t;

	if (!l->tp)
		return;
	if (l->touch_owner && l->touch_owner != slot + 1) {
		if (o->touch.fingers)
			l->st.gesture_blocked++;
		return;
	}
	/* Nothing to show and nothing shown (or a write to retry). */
	if (!o->touch.fingers && !l->touch_owner)
		return;
	if (o->touch.fingers)
		tpdev_layout(&t, o->touch.fingers, PAD_MID_X + o->touch.x_um / UM_PER_UNIT,
			     PAD_MID_Y + o->touch.y_um / UM_PER_UNIT,
			     (double)o->touch.scale_q16 / REMOLO_GESTURE_SCALE_ONE, o->touch.angle_urad * URAD);
	else
		memset(&t, 0, sizeof(t));
	/* tpdev_write writes only what differs from what reached the
	 * kernel: unchanged fingers cost no system call, and a write that
	 * failed is written whole the next time. */
	write_touches(l, &t);
	l->touch_owner = tpdev_touching(l->tp) ? (uint8_t)(slot + 1) : 0;
}

bool rx_touch_orphan(struct rx_loop *l)
{
	struct tpdev_touches none;

	if (!l->tp || !l->touch_owner || l->active[l->touch_owner - 1])
		return false;
	memset(&none, 0, sizeof(none));
	write_touches(l, &none);
	if (!tpdev_touching(l->tp))
		l->touch_owner = 0;
	return l->touch_owner != 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * uinput keyboard device (see remolo_kbddev.h), built as ptrdev.c is:
 * libevdev creates the device, frames go straight to the uinput fd with one
 * write() each, and the keys asked for are reconciled with the keys written
 * after a failed write.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <libevdev/libevdev.h>
#include <libevdev/libevdev-uinput.h>

#include "remolo_kbddev.h"
#include "evframe.h"

_Static_assert(sizeof(struct input_event) == 2 * sizeof(long) + 8, "input_event: the kernel's layout");

bool kbddev_has_key(uint16_t code)
{
	return playout_has_key(code);
}

static bool bit(const uint64_t *m, uint32_t c)
{
	return (m[c / 64] >> (c % 64)) & 1u;
}

static void put_bit(uint64_t *m, uint32_t c, bool on)
{
	if (on)
		m[c / 64] |= 1ull << (c % 64);
	else
		m[c / 64] &= ~(1ull << (c % 64));
}

static void reset(struct kbddev *d)
{
	memset(d, 0, sizeof(*d));
	d->fd = -1;
}

int kbddev_init(struct kbddev *d, const char *name)
{
	int ret = 0;

	reset(d);
	d->dev = evframe_describe(name ? name : REMOLO_KBDDEV_NAME, EVFRAME_PRODUCT_KEYBOARD);
	if (!d->dev)
		return -ENOMEM;

	/* udev's input_id calls a device with KEY_ESC, the digits and Q..D a
	 * keyboard (ID_INPUT_KEYBOARD), and libinput takes it as one. */
	for (unsigned int c = 0; ret == 0 && c < PLAYOUT_KEY_LIMIT; c++) {
		if (playout_has_key((uint16_t)c))
			ret = libevdev_enable_event_code(d->dev, EV_KEY, c, NULL);
	}
	/* EV_REP with no delay or period set: the kernel repeats held keys
	 * itself (input_register_device's soft repeat, 250 ms / 33 ms), and
	 * desktops apply their own repeat settings. */
	if (ret == 0)
		ret = libevdev_enable_event_type(d->dev, EV_REP);
	ret = evframe_create(&d->dev, &d->uidev, ret);
	if (ret < 0)
		return ret;
	d->fd = ret;
	return 0;
}

int kbddev_init_fd(struct kbddev *d, int fd)
{
	reset(d);
	if (evframe_check_fd(fd))
		return -EBADF;
	d->fd = fd;
	return 0;
}

int kbddev_encode(struct input_event *ev, size_t cap, const struct playout_key *keys, uint32_t n,
		  uint64_t held[PLAYOUT_KEY_WORDS])
{
	uint64_t touched[PLAYOUT_KEY_WORDS] = { 0 };
	int k = 0;

	if (cap < REMOLO_KBDDEV_FRAME_MAX || n > PLAYOUT_KEY_PER_TICK)
		return -EINVAL;
	for (uint32_t i = 0; i < n; i++) {
		if (!kbddev_has_key(keys[i].code))
			return -EINVAL;
	}
	for (uint32_t i = 0; i < n; i++) {
		uint16_t c = keys[i].code;

		/* Down and up of one key inside one frame would cancel out. */
		if (bit(touched, c)) {
			evframe_put(ev, &k, EV_SYN, SYN_REPORT, 0);
			memset(touched, 0, sizeof(touched));
		}
		put_bit(touched, c, true);
		evframe_put(ev, &k, EV_KEY, c, keys[i].down ? 1 : 0);
		put_bit(held, c, keys[i].down);
	}
	if (k == 0)
		return 0;
	evframe_put(ev, &k, EV_SYN, SYN_REPORT, 0);
	return k;
}

/* Brings the device's keys to what was asked for, PLAYOUT_KEY_PER_TICK
 * keys a frame: after a failed write (the playout lets each change out
 * once), and for kbddev_release. Releases first, so a retried press never
 * lands before the release it followed. */
static int reconcile(struct kbddev *d)
{
	struct playout_key fix[PLAYOUT_KEY_PER_TICK];
	int total = 0;

	for (int pass = 0; pass < 2; pass++) {
		uint8_t down = (uint8_t)pass;

		for (uint32_t w = 0; w < PLAYOUT_KEY_WORDS; w++) {
			uint64_t m = (d->held[w] ^ d->want[w]) & (down ? d->want[w] : d->held[w]);

			while (m) {
				uint64_t held[PLAYOUT_KEY_WORDS];
				uint32_t nfix = 0;
				int n, ret;

				while (m && nfix < PLAYOUT_KEY_PER_TICK) {
					fix[nfix].code = (uint16_t)(w * 64 + (uint32_t)__builtin_ctzll(m));
					fix[nfix].down = down;
					nfix++;
					m &= m - 1;
				}
				memcpy(held, d->held, sizeof(held));
				n = kbddev_encode(d->frame, REMOLO_KBDDEV_FRAME_MAX, fix, nfix, held);
				if (n <= 0)
					return n;
				ret = evframe_write(d->fd, d->frame, n);
				if (ret < 0)
					return ret;
				memcpy(d->held, held, sizeof(held));
				total += ret;
			}
		}
	}
	return total;
}

static bool alt_down(const uint64_t *m)
{
	return bit(m, KEY_LEFTALT) || bit(m, KEY_RIGHTALT);
}

int kbddev_write(struct kbddev *d, const struct playout_out *out)
{
	struct playout_key keys[PLAYOUT_KEY_PER_TICK];
	uint64_t held[PLAYOUT_KEY_WORDS];
	uint32_t n = 0;
	int k, ret;

	if (d->fd < 0)
		return -ENODEV;
	if (out->nkey > PLAYOUT_KEY_PER_TICK)
		return -EINVAL;
	for (uint32_t i = 0; i < out->nkey; i++) {
		if (!kbddev_has_key(out->key[i].code))
			return -EINVAL;
	}
	if (__builtin_expect(memcmp(d->held, d->want, sizeof(d->held)) != 0, 0))
		(void)reconcile(d);
	for (uint32_t i = 0; i < out->nkey; i++) {
		const struct playout_key *c = &out->key[i];

		if (c->code == KEY_SYSRQ && c->down && alt_down(d->want)) {
			d->sysrq_dropped++;
			continue;
		}
		/* ... and so is the release of a SysRq left out. */
		if (c->code == KEY_SYSRQ && !c->down && !bit(d->want, KEY_SYSRQ))
			continue;
		/* The request stands whether or not it reaches the kernel. */
		put_bit(d->want, c->code, c->down);
		keys[n++] = *c;
	}
	memcpy(held, d->held, sizeof(held));
	k = kbddev_encode(d->frame, REMOLO_KBDDEV_FRAME_MAX, keys, n, held);
	if (k <= 0)
		return k;
	ret = evframe_write(d->fd, d->frame, k);
	if (ret > 0)
		memcpy(d->held, held, sizeof(held));
	return ret;
}

int kbddev_release(struct kbddev *d)
{
	if (d->fd < 0)
		return -ENODEV;
	memset(d->want, 0, sizeof(d->want));
	return reconcile(d);
}

const char *kbddev_devnode(const struct kbddev *d)
{
	return d->uidev ? libevdev_uinput_get_devnode(d->uidev) : NULL;
}

void kbddev_deinit(struct kbddev *d)
{
	/* An explicit release reaches every reader in order before the device
	 * goes away (the kernel would also drop a destroyed device's keys). */
	if (d->fd >= 0)
		(void)kbddev_release(d);
	if (d->uidev)
		libevdev_uinput_destroy(d->uidev);
	if (d->dev)
		libevdev_free(d->dev);
	reset(d);
}

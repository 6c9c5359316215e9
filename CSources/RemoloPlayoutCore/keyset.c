/* SPDX-License-Identifier: MIT */
/*
 * The keys a sender may press (remolo_playout.h, playout_has_key): one
 * table that the key queue checks a change against and the keyboard device
 * (kbddev.c) enables, so the two never disagree. It lives beside the key
 * queue, not the device: the playout asks which keys exist without libevdev
 * or the device's header.
 */
#include <stddef.h>
#include <linux/input-event-codes.h>

#include "remolo_playout.h"

/* The keys, as ranges of evdev codes (linux/input-event-codes.h). Left
 * out on purpose: KEY_POWER, KEY_SLEEP, KEY_WAKEUP, KEY_SUSPEND and the
 * radio switches (KEY_RFKILL, KEY_WLAN, KEY_BLUETOOTH ...): systemd-logind
 * powers off or suspends on them from any keyboard, the locked screen
 * included, and a remote sender has no business there. */
static const struct {
	uint16_t first, last;
} key_ranges[] = {
	{ KEY_ESC, KEY_KPDOT },                 /* the main block, F1-F10, modifiers, keypad */
	{ KEY_ZENKAKUHANKAKU, KEY_KPJPCOMMA },  /* 102ND (ISO), F11, F12, Japanese keys */
	{ KEY_KPENTER, KEY_RIGHTALT },          /* keypad Enter and /, right Ctrl/Alt, SysRq (Print Screen) */
	{ KEY_HOME, KEY_DELETE },               /* navigation: Home ... arrows ... Insert, Delete */
	{ KEY_MUTE, KEY_VOLUMEUP },             /* mute, volume down and up */
	{ KEY_KPEQUAL, KEY_PAUSE },             /* keypad = and +/-, Pause */
	{ KEY_KPCOMMA, KEY_COMPOSE },           /* keypad comma, Korean keys, Yen, Meta, Menu (Compose) */
	{ KEY_STOP, KEY_CALC },                 /* Stop, Again, Undo, Copy, Paste, Find, Cut, Help, Menu, Calc */
	{ KEY_WWW, KEY_WWW },
	{ KEY_MAIL, KEY_FORWARD },              /* Mail, Bookmarks, Computer, Back, Forward */
	{ KEY_EJECTCD, KEY_EJECTCD },
	{ KEY_NEXTSONG, KEY_REWIND },           /* next, play/pause, previous, stop, record, rewind */
	{ KEY_HOMEPAGE, KEY_REFRESH },
	{ KEY_F13, KEY_F24 },
	{ KEY_PLAYCD, KEY_PAUSECD },
	{ KEY_PLAY, KEY_FASTFORWARD },
	{ KEY_PRINT, KEY_PRINT },
	{ KEY_SEARCH, KEY_SEARCH },
	{ KEY_BRIGHTNESSDOWN, KEY_MEDIA },      /* brightness down and up, Media */
	{ KEY_MICMUTE, KEY_MICMUTE },
};

_Static_assert(KEY_MICMUTE < PLAYOUT_KEY_LIMIT, "every key lies in the playout's key range");

bool playout_has_key(uint16_t code)
{
	for (size_t i = 0; i < sizeof(key_ranges) / sizeof(key_ranges[0]); i++) {
		if (code >= key_ranges[i].first && code <= key_ranges[i].last)
			return true;
	}
	return false;
}

/* SPDX-License-Identifier: MIT */
/*
 * A frame of input events as the output devices write it (ptrdev.c,
 * kbddev.c): events added in order, then the whole frame in one write().
 * Private to the core: Swift never imports this header.
 */
#ifndef REMOLO_EVFRAME_H
#define REMOLO_EVFRAME_H
#include <linux/input.h>

/* Appends one event at ev[*n] and advances *n. The time field stays zero:
 * the kernel stamps uinput events itself and ignores it. */
void evframe_put(struct input_event *ev, int *n, unsigned int type, unsigned int code, int value);

/* Writes ev[0..n) with one write() (retried on EINTR). Returns the bytes
 * written or -errno; -EIO for a short write (uinput takes whole events or
 * fails, so a short count means the kernel refused the rest). */
int evframe_write(int fd, const struct input_event *ev, int n);

#endif

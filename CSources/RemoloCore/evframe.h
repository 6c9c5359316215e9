/* SPDX-License-Identifier: MIT */
/*
 * A frame of input events as the output devices write it (ptrdev.c,
 * kbddev.c): events added in order, then the whole frame in one write().
 * Private to the core: Swift never imports this header.
 */
#ifndef REMOLO_EVFRAME_H
#define REMOLO_EVFRAME_H
#include <linux/input.h>

struct libevdev;
struct libevdev_uinput;

/* Remolo's devices share a vendor id (0x1d6b), each its own product id,
 * so udev rules and hwdb entries can match them. */
#define EVFRAME_VENDOR          0x1d6b
#define EVFRAME_PRODUCT_POINTER 0x5245
#define EVFRAME_PRODUCT_KEYBOARD 0x5246
#define EVFRAME_PRODUCT_TOUCHPAD 0x5254

/* A libevdev description named name, on BUS_VIRTUAL with Remolo's vendor
 * and this product, version 1; NULL without memory. */
struct libevdev *evframe_describe(const char *name, unsigned int product);

/* Creates the uinput device *dev describes, once its codes were enabled
 * (enabled: the last libevdev_enable_* result, non-zero = one failed).
 * libevdev opens /dev/uinput O_CLOEXEC and closes it in
 * libevdev_uinput_destroy. Returns the device's fd; or -EINVAL (a code
 * would not enable), -errno from open() and the ioctls (-ENOENT without
 * the uinput module, -EACCES without the right to open it), with *dev
 * freed and *dev, *uidev NULL. */
int evframe_create(struct libevdev **dev, struct libevdev_uinput **uidev, int enabled);

/* 0 when fd is an open descriptor (the devices' fd mode), else -EBADF:
 * checked once at setup rather than at every frame. */
int evframe_check_fd(int fd);

/* Appends one event at ev[*n] and advances *n. The time field stays zero:
 * the kernel stamps uinput events itself and ignores it. */
void evframe_put(struct input_event *ev, int *n, unsigned int type, unsigned int code, int value);

/* Writes ev[0..n) with one write() (retried on EINTR). Returns the bytes
 * written or -errno; -EIO for a short write (uinput takes whole events or
 * fails, so a short count means the kernel refused the rest). */
int evframe_write(int fd, const struct input_event *ev, int n);

#endif

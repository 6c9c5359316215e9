/* SPDX-License-Identifier: MIT */
#include "evframe.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <libevdev/libevdev.h>
#include <libevdev/libevdev-uinput.h>

struct libevdev *evframe_describe(const char *name, unsigned int product)
{
	struct libevdev *dev = libevdev_new();

	if (!dev)
		return NULL;
	libevdev_set_name(dev, name);
	libevdev_set_id_bustype(dev, BUS_VIRTUAL);
	libevdev_set_id_vendor(dev, EVFRAME_VENDOR);
	libevdev_set_id_product(dev, (int)product);
	libevdev_set_id_version(dev, 1);
	return dev;
}

int evframe_create(struct libevdev **dev, struct libevdev_uinput **uidev, int enabled)
{
	int ret = -EINVAL;

	*uidev = NULL;
	if (enabled == 0)
		ret = libevdev_uinput_create_from_device(*dev, LIBEVDEV_UINPUT_OPEN_MANAGED, uidev);
	if (ret < 0) {
		libevdev_free(*dev);
		*dev = NULL;
		*uidev = NULL;
		return ret;
	}
	return libevdev_uinput_get_fd(*uidev);
}

int evframe_check_fd(int fd)
{
	return fd < 0 || fcntl(fd, F_GETFD) < 0 ? -EBADF : 0;
}

void evframe_put(struct input_event *ev, int *n, unsigned int type, unsigned int code, int value)
{
	memset(&ev[*n], 0, sizeof(ev[*n]));
	ev[*n].type = (__u16)type;
	ev[*n].code = (__u16)code;
	ev[*n].value = value;
	(*n)++;
}

int evframe_write(int fd, const struct input_event *ev, int n)
{
	size_t len = (size_t)n * sizeof(ev[0]);
	ssize_t w;

	do {
		w = write(fd, ev, len);
	} while (w < 0 && errno == EINTR);
	if (w < 0)
		return -errno;
	if ((size_t)w != len)
		return -EIO;
	return (int)w;
}

/* SPDX-License-Identifier: MIT */
#include "evframe.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

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

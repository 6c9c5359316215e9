/* Xlib, XTest (fake relative motion, buttons, keys) and XInput 2 (device
 * properties: the uinput pointer's libinput acceleration profile). Only the
 * output adapter uses them, never RemoloCore. */
#include <X11/Xlib.h>
#include <X11/Xatom.h>
#include <X11/extensions/XTest.h>
#include <X11/extensions/XInput2.h>

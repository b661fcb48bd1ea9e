# plumbing: the internal library below both tools (util-linux's lib/ is the
# model): loop devices (loopdev.c), ...  Private headers, never installed;
# its objects go into libalign.a and libalign.so (hidden by libalign.map),
# which ublk-flash, alignpart and the tests link, as common/'s do.
PLUMB_SRCS := $(wildcard plumbing/*.c)
PLUMB_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(PLUMB_SRCS))

# plumbing: the internal library below both tools (util-linux's lib/ is the
# model): loop devices (loopdev.c), sysfs (sysfs.c), the run registry's
# reader (registry.c), device-mapper stacking (dmstack.c), mounts and
# holders (holders.c).  Public functions plumb_*, what its files share
# among themselves plumbp_* (plumb-private.h).  Private headers, never
# installed.  Its objects go into libalign.a and libalign.so (hidden by
# libalign.map), which ublk-flash, alignpart and the tests link, as
# common/'s do; all but dmstack.o, which needs libdevmapper: ublk-flash,
# alignpart and dmstack-tool link it themselves (ublk-server/module.mk).
PLUMB_SRCS   := $(filter-out plumbing/dmstack.c,$(wildcard plumbing/*.c))
PLUMB_OBJS   := $(patsubst %.c,$(BUILD)/obj/%.o,$(PLUMB_SRCS))
PLUMB_DM_OBJ := $(BUILD)/obj/plumbing/dmstack.o
EXTRA_CFLAGS_plumbing = $(call pc_cflags,devmapper)

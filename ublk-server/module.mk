# ublk-server: the engine (nand + ftl, a static library the tests link too)
# and the ublk-flash program (cli + serve + frontends).
ENGINE_SRCS    := $(wildcard ublk-server/nand/*.c ublk-server/ftl/*.c \
                             ublk-server/zoned/*.c)
ENGINE_OBJS    := $(patsubst %.c,$(BUILD)/obj/%.o,$(ENGINE_SRCS))
UBLKFLASH_SRCS := $(wildcard ublk-server/cli/*.c ublk-server/serve/*.c \
                             ublk-server/frontend/*.c)
UBLKFLASH_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(UBLKFLASH_SRCS))
EXTRA_CFLAGS_ublk-server = $(call pc_cflags,fuse3 liburing devmapper blkid smartcols)
# the engine's NBD and RBD backings (nand/nand_backing_nbd.c, _rbd.c) load
# libnbd / librbd with dlopen when such a medium is opened (libnbd.h,
# rbd/librbd.h and rados/librados.h, from librbd-dev, for the types only)
ENGINE_LIBS     = -ldl
EXTRA_CFLAGS_ublk-server += $(call pc_cflags,libnbd nbdkit)
UBLKFLASH_LIBS  = $(call pc_libs,fuse3 liburing devmapper blkid smartcols) $(ENGINE_LIBS) -lm

# The ublk uapi header (linux/ublk_cmd.h) is the one of kernel $(UBLK_UAPI), taken at build
# time from that kernel's linux-libc-dev (trixie-backports) into $(BUILD)/uapi by
# mk/apt-private.sh, never installed over the host's (Debian 12's is 6.1's).  The server
# negotiates every feature with GET_FEATURES, so the binary serves on 6.1 and 6.12 too.
# Offline: `make UBLK_UAPI=host` builds with the host's header (docs/ublk.md).
UBLK_UAPI ?= 7.3.4
ifeq ($(UBLK_UAPI),host)
UBLK_UAPI_HDR :=
UBLK_UAPI_CFLAGS := -DOCTANT_UBLK_UAPI='"host"' -DOCTANT_UBLK_UAPI_HOST
$(warning ublk: UBLK_UAPI=host: building with the host's <linux/ublk_cmd.h>, not kernel 7.3.4's (docs/ublk.md))
else
UBLK_UAPI_HDR := $(BUILD)/uapi/linux/ublk_cmd.h
UBLK_UAPI_CFLAGS := -I$(BUILD)/uapi -DOCTANT_UBLK_UAPI='"$(UBLK_UAPI)"'
$(UBLK_UAPI_HDR):
	@mk/apt-private.sh uapi $(UBLK_UAPI) $(BUILD)/uapi || { \
	 echo "make: cannot get linux/ublk_cmd.h of kernel $(UBLK_UAPI) (linux-libc-dev, trixie-backports);" \
	      "see the line above. Offline: make UBLK_UAPI=host (the host's header; docs/ublk.md)" >&2; exit 1; }
endif
EXTRA_CFLAGS_ublk-server += $(UBLK_UAPI_CFLAGS)
$(UBLKFLASH_OBJS): | $(UBLK_UAPI_HDR)

all: $(BUILD)/libengine.a $(BUILD)/ublk-flash

$(BUILD)/libengine.a: $(ENGINE_OBJS)
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/ublk-flash: $(UBLKFLASH_OBJS) $(PLUMB_DM_OBJ) $(BUILD)/libengine.a $(BUILD)/libalign.a
	$(CC) $(LDFLAGS) -o $@ $^ $(UBLKFLASH_LIBS) $(LIBALIGN_LIBS)

# device-mapper stacking (plumbing/dmstack.c) is shared with alignpart's
# map/unmap (partition-tool/ap-map.c) and with the guest test tool dmstack-tool.
$(BUILD)/alignpart: $(PLUMB_DM_OBJ)
all: $(BUILD)/dmstack-tool
$(BUILD)/dmstack-tool: $(BUILD)/obj/tests/vm/dmstack-tool.o \
                       $(PLUMB_DM_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(call pc_libs,devmapper)

# nbdkit-octant-plugin.so: the engine served over NBD by nbdkit
# (nbdkit octant IMG, or nbdkit build/nbdkit-octant-plugin.so IMG).
# Only plugin_init is exported (ublk-server/nbdkit/plugin.map); nbdkit_*
# symbols come from the nbdkit executable at load time (so no -z defs).
NBDKIT_PLUGIN_OBJS = $(BUILD)/obj/ublk-server/nbdkit/octant-plugin.o \
                     $(BUILD)/obj/ublk-server/frontend/byteio.o
all: $(BUILD)/nbdkit-octant-plugin.so
$(BUILD)/nbdkit-octant-plugin.so: $(NBDKIT_PLUGIN_OBJS) $(BUILD)/libengine.a \
                                  $(BUILD)/libalign.a ublk-server/nbdkit/plugin.map
	$(CC) -shared -Wl,--version-script=ublk-server/nbdkit/plugin.map \
		$(LDFLAGS) -o $@ $(NBDKIT_PLUGIN_OBJS) $(BUILD)/libengine.a \
		$(BUILD)/libalign.a $(ENGINE_LIBS) $(LIBALIGN_LIBS) -lm

# fd-hold: a copy of another process's open file (its flock with it), for
# tests/vm/guest/ublk-upgrade-fail.sh; dgram-listen: a $NOTIFY_SOCKET listener
# for tests/vm/guest/ublk-upgrade.sh (the guest has no python3).
all: $(BUILD)/fd-hold $(BUILD)/dgram-listen
$(BUILD)/fd-hold: $(BUILD)/obj/tests/vm/fd-hold.o
	$(CC) $(LDFLAGS) -o $@ $^
$(BUILD)/dgram-listen: $(BUILD)/obj/tests/vm/dgram-listen.o
	$(CC) $(LDFLAGS) -o $@ $^

# LD_PRELOAD shims for the cli tests, built without -MMD (no .d beside
# them: nothing includes them).
SHIM_CFLAGS = $(filter-out -MMD -MP,$(CFLAGS)) -shared -fPIC

# flock-delay.so: an LD_PRELOAD shim delaying flock(), for the racing-create
# case of tests/cli/ublk-flash-engine.bats.
all: $(BUILD)/flock-delay.so
$(BUILD)/flock-delay.so: tests/cli/flock-delay.c
	$(CC) $(SHIM_CFLAGS) $(LDFLAGS) -o $@ $< -ldl

# die-at-write.so: an LD_PRELOAD shim killing its process before a chosen
# write, for the cut-short resize case of tests/cli/ublk-flash-resize.bats.
all: $(BUILD)/die-at-write.so
$(BUILD)/die-at-write.so: tests/cli/die-at-write.c
	$(CC) $(SHIM_CFLAGS) $(LDFLAGS) -o $@ $< -ldl

# ublk-probe: the frontend's control-path decisions (opcode encoding, features) on the
# running kernel, for tests/vm/guest/ublk-opcodes.sh.
all: $(BUILD)/ublk-probe
$(BUILD)/ublk-probe: $(BUILD)/obj/tests/vm/ublk-probe.o \
                     $(BUILD)/obj/ublk-server/frontend/ublk-ctrl.o
	$(CC) $(LDFLAGS) -o $@ $^ $(call pc_libs,liburing)
$(BUILD)/obj/tests/vm/ublk-probe.o: EXTRA_CFLAGS_tests += $(UBLK_UAPI_CFLAGS)
$(BUILD)/obj/tests/vm/ublk-probe.o: | $(UBLK_UAPI_HDR)

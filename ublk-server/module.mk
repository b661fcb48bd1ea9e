# ublk-server: the engine (nand + ftl, a static library the tests link too)
# and the ublk-flash program (cli + serve + frontends).
ENGINE_SRCS    := $(wildcard ublk-server/nand/*.c ublk-server/ftl/*.c)
ENGINE_OBJS    := $(patsubst %.c,$(BUILD)/obj/%.o,$(ENGINE_SRCS))
UBLKFLASH_SRCS := $(wildcard ublk-server/cli/*.c ublk-server/serve/*.c \
                             ublk-server/frontend/*.c ublk-server/dm/*.c)
UBLKFLASH_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(UBLKFLASH_SRCS))
EXTRA_CFLAGS_ublk-server = $(call pc_cflags,fuse3 liburing devmapper blkid smartcols) \
                            -Iublk-server/dm
# the engine's NBD backing (nand/nand_backing_nbd.c) loads libnbd with
# dlopen when an NBD medium is opened (libnbd.h for the types only)
ENGINE_LIBS     = -ldl
EXTRA_CFLAGS_ublk-server += $(call pc_cflags,libnbd nbdkit)
UBLKFLASH_LIBS  = $(call pc_libs,fuse3 liburing devmapper blkid smartcols) $(ENGINE_LIBS) -lm

all: $(BUILD)/libengine.a $(BUILD)/ublk-flash

$(BUILD)/libengine.a: $(ENGINE_OBJS)
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/ublk-flash: $(UBLKFLASH_OBJS) $(BUILD)/libengine.a $(BUILD)/libalign.a
	$(CC) $(LDFLAGS) -o $@ $^ $(UBLKFLASH_LIBS) $(LIBALIGN_LIBS)

# device-mapper stacking (ublk-server/dm/dm-stack.c) is shared with alignpart's
# map/unmap (partition-tool/ap-map.c) and with the guest test tool dmstack-tool.
$(BUILD)/alignpart: $(BUILD)/obj/ublk-server/dm/dm-stack.o
all: $(BUILD)/dmstack-tool
$(BUILD)/dmstack-tool: $(BUILD)/obj/tests/vm/dmstack-tool.o \
                       $(BUILD)/obj/ublk-server/dm/dm-stack.o
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

# ublk-probe: the frontend's control-path decisions (opcode encoding, features) on the
# running kernel, for tests/vm/guest/ublk-opcodes.sh.
all: $(BUILD)/ublk-probe
$(BUILD)/ublk-probe: $(BUILD)/obj/tests/vm/ublk-probe.o \
                     $(BUILD)/obj/ublk-server/frontend/ublk-ctrl.o
	$(CC) $(LDFLAGS) -o $@ $^ $(call pc_libs,liburing)

# partition-tool: alignpart (libalign + libfdisk + libsmartcols + libblkid;
# mount points: plumbing/holders.c;
# libdevmapper for map/unmap, whose plumbing/dmstack.o ublk-server/module.mk adds).
ALIGNPART_SRCS := $(wildcard partition-tool/*.c)
ALIGNPART_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(ALIGNPART_SRCS))
EXTRA_CFLAGS_partition-tool = $(call pc_cflags,fdisk smartcols blkid devmapper)
ALIGNPART_LIBS  = $(call pc_libs,fdisk smartcols blkid devmapper)

all: $(BUILD)/alignpart

$(BUILD)/alignpart: $(ALIGNPART_OBJS) $(BUILD)/libalign.a
	$(CC) $(LDFLAGS) -o $@ $^ $(ALIGNPART_LIBS) $(LIBALIGN_LIBS)

# libalign: static + shared library, pkg-config file, version script.
COMMON_SRCS   := $(wildcard common/*.c)
LIBALIGN_SRCS := $(wildcard libalign/*.c)
LIBALIGN_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(LIBALIGN_SRCS) $(COMMON_SRCS))
EXTRA_CFLAGS_libalign = $(call pc_cflags,blkid)
LIBALIGN_LIBS  = $(call pc_libs,blkid)

all: $(BUILD)/libalign.a $(BUILD)/libalign.so $(BUILD)/libalign.pc

$(BUILD)/libalign.a: $(LIBALIGN_OBJS)
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/libalign.so: $(LIBALIGN_OBJS) libalign/libalign.map
	$(CC) -shared -Wl,-soname,libalign.so.0 -Wl,--version-script=libalign/libalign.map \
		$(LDFLAGS) -o $@ $(LIBALIGN_OBJS) $(LIBALIGN_LIBS)

$(BUILD)/libalign.pc: libalign/libalign.pc.in
	@mkdir -p $(@D)
	sed -e 's|@VERSION@|$(VERSION)|' -e 's|@PREFIX@|$(or $(PREFIX),/usr/local)|' $< > $@

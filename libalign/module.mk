# libalign: static + shared library, pkg-config file, version script.
COMMON_SRCS   := $(wildcard common/*.c)
LIBALIGN_SRCS := $(wildcard libalign/*.c)
LIBALIGN_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(LIBALIGN_SRCS) $(COMMON_SRCS))
EXTRA_CFLAGS_libalign = $(call pc_cflags,blkid)
LIBALIGN_LIBS  = $(call pc_libs,blkid)

all: $(BUILD)/libalign.a $(BUILD)/libalign.so $(BUILD)/libalign.so.0 $(BUILD)/libalign.pc

$(BUILD)/libalign.a: $(LIBALIGN_OBJS)
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/libalign.so: $(LIBALIGN_OBJS) libalign/libalign.map
	$(CC) -shared -Wl,-soname,libalign.so.0 -Wl,--version-script=libalign/libalign.map -Wl,-z,defs \
		$(LDFLAGS) -o $@ $(LIBALIGN_OBJS) $(LIBALIGN_LIBS)

# the soname the loader looks for, next to the linker name
$(BUILD)/libalign.so.0: $(BUILD)/libalign.so
	ln -sf libalign.so $@

$(BUILD)/libalign.pc: libalign/libalign.pc.in
	@mkdir -p $(@D)
	sed -e 's|@VERSION@|$(VERSION)|' -e 's|@PREFIX@|$(or $(PREFIX),/usr/local)|' $< > $@

# make install-libalign [PREFIX=/usr/local] [DESTDIR=...]: the layout the
# .pc file describes (headers in include/octant, libraries in lib).
.PHONY: install-libalign
install-libalign: $(BUILD)/libalign.a $(BUILD)/libalign.so $(BUILD)/libalign.pc
	install -D -m 644 libalign/align.h $(DESTDIR)$(or $(PREFIX),/usr/local)/include/octant/align.h
	install -D -m 644 $(BUILD)/libalign.a $(DESTDIR)$(or $(PREFIX),/usr/local)/lib/libalign.a
	install -D -m 755 $(BUILD)/libalign.so $(DESTDIR)$(or $(PREFIX),/usr/local)/lib/libalign.so.0
	ln -sf libalign.so.0 $(DESTDIR)$(or $(PREFIX),/usr/local)/lib/libalign.so
	install -D -m 644 $(BUILD)/libalign.pc $(DESTDIR)$(or $(PREFIX),/usr/local)/lib/pkgconfig/libalign.pc

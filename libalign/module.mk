# libalign: static + shared library, pkg-config file, version script.
COMMON_SRCS   := $(wildcard common/*.c)
LIBALIGN_SRCS := $(wildcard libalign/*.c)
LIBALIGN_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(LIBALIGN_SRCS) $(COMMON_SRCS) \
                                                   $(PLUMB_SRCS))
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

# build/libalign.pc describes PREFIX/LIBDIR (dist/module.mk); `make install`
# writes the installed one from the same template with the same variables.
$(BUILD)/libalign.pc: libalign/libalign.pc.in
	@mkdir -p $(@D)
	$(pc_sed) $< > $@

# octant — one Makefile; each component adds its rules in its module.mk.
#   make            build everything into build/
#   make check      install missing Debian packages, build, run every test tier
#   make install    [PREFIX= DESTDIR= BINDIR= LIBDIR=] (dist/module.mk); make uninstall
#   make deb        the Debian packages of debian/ + lintian, into build/deb (mk/deb.sh)
#   make compare    the main job: alignment cost of ext4/btrfs on emulated flash
#   make bench      benchmarks (ratios side by side, not tests)
#   make fuzz       libFuzzer harnesses, FUZZ_SECONDS each (tests/fuzz/)
#   make SANITIZE=1 BUILD=build/san ...   ASan + UBSan build
#                                         (and FTL_CKPT_CHECK: full-table cross-checks,
#                                          FTL_LOCK_CHECK: lock-held assertions)
SHELL    := /bin/bash
BUILD    ?= build
CC       ?= gcc
VERSION  := 0.1.0
PKG_CONFIG ?= pkg-config

CFLAGS   ?= -O2 -g
CFLAGS   += -std=c11 -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 -fPIC -pthread \
            -Wall -Wextra -Werror -Wno-missing-field-initializers \
            -MMD -MP -DOCTANT_VERSION='"$(VERSION)"' \
            -Ilibalign -Icommon -Iplumbing -Iublk-server/nand -Iublk-server/ftl \
            -Iublk-server/zoned \
            -Iublk-server/frontend -Iublk-server/serve
LDFLAGS  += -pthread
ifeq ($(SANITIZE),1)
CFLAGS   += -fsanitize=address,undefined -fno-omit-frame-pointer \
            -fno-sanitize-recover=all -O1 -DFTL_CKPT_CHECK -DFTL_LOCK_CHECK
LDFLAGS  += -fsanitize=address,undefined
endif

# pkg-config is read when a recipe runs (after `make deps` may have run).
pc_cflags = $(shell $(PKG_CONFIG) --cflags $(1) 2>/dev/null)
pc_libs   = $(shell $(PKG_CONFIG) --libs $(1) 2>/dev/null)

.PHONY: all deps check check-unit check-cli check-integration check-vm \
        check-long check-long-san bench bench-vm compare clean
all:

deps:
	@mk/deps.sh build

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(EXTRA_CFLAGS_$(firstword $(subst /, ,$<))) -c -o $@ $<

include dist/module.mk
include plumbing/module.mk
include libalign/module.mk
include ublk-server/module.mk
include partition-tool/module.mk
include tests/module.mk
include tests/fuzz/module.mk

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)

clean:
	rm -rf build

# Fuzzing (tests/fuzz/README.md).  Each tests/fuzz/fuzz-NAME.c is a
# libFuzzer harness (one LLVMFuzzerTestOneInput).
#   make fuzz [FUZZ_SECONDS=60] [FUZZ_NAMES="image fsck"]
#       clang + libFuzzer + ASan/UBSan builds in $(BUILD)/fuzz, each harness
#       runs FUZZ_SECONDS, exec counts printed (tests/fuzz/run).
#   make check / check-unit
#       gcc-built replay drivers (replay.c) run every file of
#       tests/fuzz/corpus/NAME/ as unit tests fuzz-replay-NAME (normal and
#       SANITIZE builds), and fuzz-oracle checks what mutated images serve.
FUZZ_NAMES   ?= $(patsubst tests/fuzz/fuzz-%.c,%,$(filter-out tests/fuzz/fuzz-img.c,\
                  $(wildcard tests/fuzz/fuzz-*.c)))
FUZZ_SECONDS ?= 60
FUZZ_IMG_OBJ := $(BUILD)/obj/tests/fuzz/fuzz-img.o
# alignpart without its main() (the script harness calls its parser)
FUZZ_AP_OBJS  = $(filter-out $(BUILD)/obj/partition-tool/main.o,$(ALIGNPART_OBJS)) \
                $(PLUMB_DM_OBJ)
FUZZ_DEPS     = $(FUZZ_IMG_OBJ) $(FUZZ_AP_OBJS) $(BUILD)/libengine.a $(BUILD)/libalign.a
FUZZ_LIBS     = $(ALIGNPART_LIBS) $(ENGINE_LIBS) $(LIBALIGN_LIBS) -lm

$(BUILD)/obj/tests/fuzz/%.o: CFLAGS += -Itests/fuzz -Itests/unit -Ipartition-tool \
                                       $(call pc_cflags,fdisk)

FUZZ_REPLAY := $(patsubst %,$(BUILD)/tests/unit/fuzz-replay-%,$(FUZZ_NAMES)) \
               $(BUILD)/tests/unit/fuzz-oracle
all: $(FUZZ_REPLAY)
unit-bins: $(FUZZ_REPLAY)

$(BUILD)/tests/unit/fuzz-replay-%: $(BUILD)/obj/tests/fuzz/replay.o \
                                   $(BUILD)/obj/tests/fuzz/fuzz-%.o $(FUZZ_DEPS)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(FUZZ_LIBS)

$(BUILD)/tests/unit/fuzz-oracle: $(BUILD)/obj/tests/fuzz/oracle.o $(FUZZ_DEPS)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(FUZZ_LIBS)

# ---- libFuzzer builds (make fuzz runs these in BUILD=$(BUILD)/fuzz) ----
ifeq ($(FUZZ),1)
CFLAGS  += -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all \
           -fno-omit-frame-pointer -O1
LDFLAGS += -fsanitize=address,undefined
endif

.PHONY: fuzz fuzz-bins
fuzz-bins: $(patsubst %,$(BUILD)/fuzz-%,$(FUZZ_NAMES))

$(BUILD)/fuzz-%: $(BUILD)/obj/tests/fuzz/fuzz-%.o $(FUZZ_DEPS)
	$(CC) $(LDFLAGS) -fsanitize=fuzzer -o $@ $^ $(FUZZ_LIBS)

fuzz:
	@mk/deps.sh fuzz
	@$(MAKE) --no-print-directory BUILD=$(BUILD)/fuzz CC=clang FUZZ=1 \
		FUZZ_NAMES="$(FUZZ_NAMES)" fuzz-bins
	@FUZZ_BUILD=$(BUILD)/fuzz FUZZ_SECONDS=$(FUZZ_SECONDS) tests/fuzz/run $(FUZZ_NAMES)

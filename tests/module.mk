# Test tiers. Unit tests: one standalone program per tests/unit/*.c
# (exit 0 pass, 1 fail, 77 skip), linked with the engine and libalign.
UNIT_SRCS  := $(wildcard tests/unit/*.c)
UNIT_BINS  := $(patsubst tests/unit/%.c,$(BUILD)/tests/unit/%,$(UNIT_SRCS))
EXTRA_CFLAGS_tests = -Itests/unit

all: $(UNIT_BINS)
unit-bins: $(UNIT_BINS)

$(BUILD)/tests/unit/%: $(BUILD)/obj/tests/unit/%.o $(BUILD)/libengine.a $(BUILD)/libalign.a
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(ENGINE_LIBS) $(LIBALIGN_LIBS) -lm
# serve-notify tests the sd_notify client of the server (serve/notify.c,
# which asks plumbing/sysfs.c for the udev change event)
$(BUILD)/tests/unit/serve-notify: $(BUILD)/obj/ublk-server/serve/notify.o \
                                  $(BUILD)/obj/plumbing/sysfs.o

# nbd-exercise: an NBD client with a shadow copy (tests/integration/nbd-*.bats)
all: $(BUILD)/tests/nbd-exercise
$(BUILD)/tests/nbd-exercise: $(BUILD)/obj/tests/nbd/nbd-exercise.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(call pc_libs,libnbd)

RUNNER := tests/runner
TIERS  ?= unit unit-san cli integration vm

# The README's test command: install what is missing, build, run every tier.
check:
	@mk/deps.sh check
	@$(MAKE) --no-print-directory all
	@$(MAKE) --no-print-directory BUILD=$(BUILD)/san SANITIZE=1 unit-bins
	@BUILD=$(BUILD) $(RUNNER) $(TIERS)

check-unit:
	@$(MAKE) --no-print-directory all
	@BUILD=$(BUILD) $(RUNNER) unit
check-cli:
	@$(MAKE) --no-print-directory all
	@BUILD=$(BUILD) $(RUNNER) cli
check-integration:
	@$(MAKE) --no-print-directory all
	@BUILD=$(BUILD) $(RUNNER) integration
check-vm:
	@mk/deps.sh check
	@$(MAKE) --no-print-directory all
	@BUILD=$(BUILD) $(RUNNER) vm
check-long:
	@$(MAKE) --no-print-directory all
	@BUILD=$(BUILD) OCTANT_LONG=1 $(RUNNER) unit integration
# the long modes in the sanitizer build (ASan, UBSan, lock assertions)
check-long-san:
	@$(MAKE) --no-print-directory BUILD=$(BUILD)/san SANITIZE=1 unit-bins
	@BUILD=$(BUILD) OCTANT_LONG=1 $(RUNNER) unit-san

bench:
	@mk/deps.sh bench
	@$(MAKE) --no-print-directory all
	@BUILD=$(BUILD) tests/bench/run $(ARGS)

bench-vm:
	@mk/deps.sh bench vm
	@$(MAKE) --no-print-directory all
	@BUILD=$(BUILD) tests/bench/bench-vm

compare:
	@mk/deps.sh compare
	@$(MAKE) --no-print-directory all
	@if [ -x tests/compare/run ]; then BUILD=$(BUILD) tests/compare/run $(ARGS); \
	 else echo "make compare: not ready yet (issue: make compare)"; fi

# The crash-consistency replay tools of the vm tier (tests/vm/guest/crash-replay.sh):
# a dm-log-writes replayer and a deterministic fsync workload (it sends dm marks).
# logreplay-engine replays such a log into the engine on the host (power cut at every point).
VM_TOOLS := $(BUILD)/tests/vm/logreplay $(BUILD)/tests/vm/fsync-workload \
            $(BUILD)/tests/vm/logreplay-engine $(BUILD)/tests/vm/find-bytes
all: $(VM_TOOLS)
$(BUILD)/tests/vm/logreplay: $(BUILD)/obj/tests/vm/logreplay.o $(BUILD)/obj/tests/vm/lw-log.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^
$(BUILD)/tests/vm/logreplay-engine: $(BUILD)/obj/tests/vm/logreplay-engine.o \
                                    $(BUILD)/obj/tests/vm/lw-log.o \
                                    $(BUILD)/libengine.a $(BUILD)/libalign.a
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(ENGINE_LIBS) $(LIBALIGN_LIBS) -lm
$(BUILD)/tests/vm/find-bytes: $(BUILD)/obj/tests/vm/find-bytes.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^
$(BUILD)/tests/vm/fsync-workload: $(BUILD)/obj/tests/vm/fsync-workload.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(call pc_libs,devmapper)

# bench-engine: make bench's engine benchmark (tests/bench/bench-engine runs it), built
# with everything else: a change that broke it went unseen until the next benchmark (the
# h8/streams merge dropped a closing brace of pi_cost)
all: $(BUILD)/tests/bench/bench-engine
$(BUILD)/tests/bench/bench-engine: $(BUILD)/obj/tests/bench/bench-engine.o $(BUILD)/libengine.a $(BUILD)/libalign.a
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(ENGINE_LIBS) $(LIBALIGN_LIBS) -lm

# tcg-calib: what the server's per-I/O primitives cost here (crc32c per implementation,
# memcpy, pread/pwrite, syscalls, io_uring), for tests/bench/bench-calib, which runs it on
# the host and in the TCG guest (the top of BUILD is shipped to the guest).
all: $(BUILD)/tcg-calib
$(BUILD)/tcg-calib: $(BUILD)/obj/tests/bench/tcg-calib.o $(BUILD)/libalign.a
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(call pc_libs,liburing)

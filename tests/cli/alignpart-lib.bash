# Shared helpers for tests/cli/alignpart-*.bats (loaded after ../helpers).

# ap_setup: scratch folder as the working directory (outputs name images
# relatively, so expected-output files are stable), alignpart built.
ap_setup() {
	bats_require_minimum_version 1.5.0
	[ -x "$ALIGNPART" ] || skip "alignpart not built ($ALIGNPART)"
	setup_scratch
	cd "$SCRATCH"
	EXP=$OCTANT_TOP/tests/cli/expected/alignpart
}

# img NAME SIZE: a fresh sparse image file.
img() {
	rm -f "$1" && truncate -s "$2" "$1"
}

# sum IMG: checksum of the whole image.
sum() {
	sha256sum <"$1" | cut -d' ' -f1
}

# xval IMG LABEL "START:SECTORS ...": the real peers read exactly these
# partitions: sfdisk --json (label, starts, sizes), parted -m (starts,
# ends, sizes), and sgdisk -v reports no problems for GPT.
xval() {
	local img=$1 label=$2 want=$3 got json pm i=0 s n
	requires sfdisk parted
	json=$(sfdisk --json "$img")
	echo "$json" | grep -q "\"label\": \"$label\"" || {
		echo "sfdisk --json: label is not $label: $json"; return 1; }
	got=$(echo "$json" | awk -F'[:,]' '/"start":/ {s=$2+0} /"size":/ {printf "%s:%s ", s, $2+0}')
	[ "${got% }" = "$want" ] || {
		echo "sfdisk --json: want '$want' got '${got% }'"; return 1; }
	pm=$(parted -s -m "$img" unit s print)
	[ "$label" = dos ] && label=msdos
	echo "$pm" | grep -q ":$label:" || { echo "parted: not $label: $pm"; return 1; }
	for s in $want; do
		i=$((i + 1))
		n=${s#*:}; s=${s%:*}
		echo "$pm" | grep -q "^$i:${s}s:$((s + n - 1))s:${n}s:" || {
			echo "parted disagrees on partition $i ($s+$n): $pm"; return 1; }
	done
	[ "$(echo "$pm" | grep -c '^[0-9]')" -eq "$i" ] || {
		echo "parted sees another number of partitions: $pm"; return 1; }
	if [ "$label" = gpt ]; then
		requires sgdisk
		local v
		v=$(sgdisk -v "$img" 2>&1) || true
		echo "$v" | grep -q "No problems found" || {
			echo "sgdisk -v: $v"; return 1; }
	fi
}

# one_line_error CODE: the last `run` failed with CODE and printed exactly
# one line, an "alignpart: " error.
one_line_error() {
	[ "$status" -eq "$1" ] || { echo "exit $status, want $1: $output"; return 1; }
	[ "${#lines[@]}" -eq 1 ] || { echo "want one line, got: $output"; return 1; }
	[[ "${lines[0]}" == alignpart:* ]] || { echo "not an alignpart error: $output"; return 1; }
}

# octant_image IMG MODE(1 = odd, 2 = 1m): a minimal octant flash image
# header (both superblock copies, crc32c) exporting 64 MiB of 512-byte
# sectors on 4 KiB pages, 64 pages per erase block (common/oct-format.h).
octant_image() {
	requires python3
	python3 - "$1" "$2" <<'PY'
import struct, sys
def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF
path, mode = sys.argv[1], int(sys.argv[2])
shift = 512 if mode == 1 else 0
head = struct.pack("<8sIIIIIIQIIIIQQII16sQI", b"OCTFLASH", 1, 0, 512, mode,
                   shift, 512, 131072, 4096, 128, 64, 300, 8192, 8192 + 300 * 64 * 4096,
                   70, 2, bytes(16), 0, 0)
sb = bytearray(head + bytes(512 - len(head)))
struct.pack_into("<I", sb, 12, crc32c(bytes(sb)))
with open(path, "wb") as f:
    f.write(sb); f.seek(4096); f.write(sb); f.truncate(1 << 20)
PY
}

# ap_teardown: remove the scratch folder (also when setup skipped early).
ap_teardown() {
	cd /
	[ -z "${SCRATCH:-}" ] || rm -rf "$SCRATCH"
}

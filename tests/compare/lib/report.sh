# shellcheck shell=bash
# make compare: per-workload records (engine counter deltas + fio), the terminal
# table, CSV/JSON files and the plot data.  Sourced by tests/compare/run.

# report_record DIR WORKLOAD: one JSON record (a line) for the cell's workload, from
# DIR/WORKLOAD.{before,after,fio}.json; appended to $OUT/results.jsonl.
report_record() {
	local dir=$1 w=$2 fio_json
	# fio may print warnings before its JSON.
	fio_json=$(sed -n '/^{/,$p' "$dir/$w.fio.json")
	jq -c -n \
		--slurpfile b "$dir/$w.before.json" --slurpfile a "$dir/$w.after.json" \
		--argjson f "${fio_json:-null}" \
		--arg cell "$CELL_NAME" --arg fs "$CELL_FS" --arg mode "$CELL_MODE" \
		--argjson start "$CELL_START" --arg workload "$w" --arg aligned "$CELL_ALIGNED" \
		--arg predicted "$CELL_PREDICTED" --arg explain "$CELL_EXPLAIN" --arg topo "$CELL_TOPO" \
		--argjson page "$CELL_PAGE" --arg dev "$CELL_DEV" '
	def num: if type == "number" then . else null end;
	def d(k): (($a[0][k] // 0) - ($b[0][k] // 0));
	def per(x; y): if (y // 0) > 0 and x != null then x / y else null end;
	def us(x): if x == null then null else x / 1000 end;
	($f.jobs[0] // {}) as $j
	| (d("host_write_sectors") * 512) as $host
	| (d("page_programs") * $page) as $flash
	| {
	  cell: $cell, fs: $fs, mode: $mode, start: $start, workload: $workload,
	  topology: $topo, page_size: $page, device: $dev,
	  alignpart_aligned: ($aligned == "yes"),
	  predicted_alignment_offset: ($predicted | tonumber? // null),
	  alignpart_explanation: $explain,
	  app_bytes: ($j.write.io_bytes | num),
	  host_bytes: $host,
	  host_flushes: d("host_flushes"),
	  host_discard_bytes: (d("host_discard_sectors") * 512),
	  page_programs: d("page_programs"),
	  flush_pages: d("fsum_pages"),
	  flash_bytes: $flash,
	  page_reads: d("page_reads"),
	  block_erases: d("block_erases"),
	  rmw_subpage: d("rmw_subpage"),
	  rmw_straddle: d("rmw_straddle"),
	  straddle_per_page: per(d("rmw_straddle"); $host / $page),
	  subpage_per_page: per(d("rmw_subpage"); $host / $page),
	  gc_relocations: d("gc_relocations"),
	  wl_relocations: d("wl_relocations"),
	  ckpt_writes: d("ckpt_writes"),
	  nand_violations: d("nand_violations"),
	  write_amplification: per($flash; $host),
	  fio_runtime_s: (($j.write.runtime // null) | if . == null then null else . / 1000 end),
	  fio_bw_mib_s: (($j.write.bw // null) | if . == null then null else . / 1024 end),
	  fio_iops: ($j.write.iops | num),
	  lat_p50_us: us($j.write.clat_ns.percentile["50.000000"]),
	  lat_p99_us: us($j.write.clat_ns.percentile["99.000000"]),
	  lat_p999_us: us($j.write.clat_ns.percentile["99.900000"]),
	  lat_mean_us: us($j.write.clat_ns.mean),
	  fsync_count: ($j.sync.total_ios | num),
	  fsync_p50_us: us($j.sync.lat_ns.percentile["50.000000"]),
	  fsync_p99_us: us($j.sync.lat_ns.percentile["99.000000"])
	}' >>"$OUT/results.jsonl"
}

REPORT_FMT='%-5s %-4s %5s %-15s %-10s %8s %9s %7s %8s %8s %6s %6s %6s %7s %9s\n'

report_header() {
	# shellcheck disable=SC2059
	printf "$REPORT_FMT" fs mode start "alignpart" workload "host MiB" "pages" "erases" \
		"RMW sub" "RMW str" "str/pg" "WA" "GC rl" "MiB/s" "p99 us"
}

# report_row: print the last record of results.jsonl as a table row.
report_row() {
	local line
	line=$(tail -n 1 "$OUT/results.jsonl" | jq -r '
	def f(n): if . == null then "-" else (. * pow(10; n) | round) / pow(10; n) | tostring end;
	[.fs, .mode, (.start | tostring),
	 (if .alignpart_aligned then "aligned" else "MISALIGNED" end)
	   + " " + (.predicted_alignment_offset | if . == null then "?" else tostring end),
	 .workload, (.host_bytes / 1048576 | f(1)), (.page_programs | tostring),
	 (.block_erases | tostring), (.rmw_subpage | tostring), (.rmw_straddle | tostring),
	 (.straddle_per_page | f(2)), (.write_amplification | f(2)),
	 (.gc_relocations | tostring), (.fio_bw_mib_s | f(1)), (.lat_p99_us | f(0))] | @tsv')
	local IFS=$'\t'
	# shellcheck disable=SC2086,SC2059
	cmp_progress_clear
	# shellcheck disable=SC2086,SC2059
	printf "$REPORT_FMT" $line
}

# report_finish: results.json (meta + records) and results.csv from results.jsonl.
report_finish() {
	local meta=$1
	jq -s --argjson meta "$meta" '{meta: $meta, results: .}' "$OUT/results.jsonl" >"$OUT/results.json"
	jq -r -s '(.[0] | keys_unsorted) as $k | ($k | @csv), (.[] | [.[$k[]]] | @csv)' \
		"$OUT/results.jsonl" >"$OUT/results.csv"
	report_markdown
}

# report_plot_data METRIC FILE: rows = workloads, columns = cells (gnuplot histogram).
report_plot_data() {
	jq -r -s --arg m "$1" '
	def cell_label: "\(.fs) \(.mode)@\(.start) \(if .alignpart_aligned then "aligned" else "misaligned" end)";
	(reduce .[] as $r ([]; if any(.[]; . == $r.cell) then . else . + [$r.cell] end)) as $cells
	| (reduce .[] as $r ([]; if any(.[]; . == $r.workload) then . else . + [$r.workload] end)) as $wls
	| (map({key: .cell, value: cell_label}) | from_entries) as $labels
	| (["workload"] + [$cells[] | $labels[.]] | map("\"" + . + "\"") | join(" ")),
	  ($wls[] as $w
	   | ([$w] + [$cells[] as $c
	        | (first(.[] | select(.cell == $c and .workload == $w) | .[$m]) // "?")
	        | tostring]) | join(" "))' "$OUT/results.jsonl" >"$2"
}

# report_plot_colors: one colour per cell, cool for aligned, warm for misaligned.
report_plot_colors() {
	jq -r -s '
	(reduce .[] as $r ([]; if any(.[]; .cell == $r.cell) then . else . + [$r] end)) as $cells
	| ["#1b9e77", "#2c7fb8", "#66c2a5", "#41b6c4", "#7570b3", "#a6bddb"] as $cool
	| ["#d95f02", "#e7298a", "#fc8d62", "#e6ab02", "#a6761d", "#fb9a99"] as $warm
	| reduce $cells[] as $c ({a: 0, m: 0, out: []};
	    if $c.alignpart_aligned then .out += [$cool[.a % 6]] | .a += 1
	    else .out += [$warm[.m % 6]] | .m += 1 end)
	| .out | join(" ")' "$OUT/results.jsonl"
}

# report_plots: plot.png and plot.svg (WA, straddling RMWs per page, throughput).
report_plots() {
	local m
	for m in write_amplification straddle_per_page fio_bw_mib_s; do
		report_plot_data "$m" "$OUT/plot-$m.dat"
	done
	local page
	page=$(jq -r -s '.[0].page_size / 1024 | "\(.) KiB"' "$OUT/results.jsonl")
	local term
	: >"$OUT/gnuplot.log"
	for term in png svg; do
		gnuplot -e "dir='$OUT'; term='$term'; colors='$(report_plot_colors)'; page='$page'; subtitle='$1'" \
			"$CMP_HERE/plot.gp" >>"$OUT/gnuplot.log" 2>&1 || return 1
	done
}

# report_markdown: table.md, the results as a Markdown table (for docs/results.md).
report_markdown() {
	jq -r -s '
	def f(n): if . == null then "-" else (. * pow(10; n) | round) / pow(10; n) | tostring end;
	"| fs | mode | start | alignpart (predicted offset) | workload | host MiB | pages programmed | erases | RMW sub-page | RMW straddling | straddling / page | WA | GC relocations | MiB/s | p99 lat us |",
	"|---|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
	(.[] | "| \(.fs) | \(.mode) | \(.start) | \(if .alignpart_aligned then "aligned" else "**misaligned**" end) (\(.predicted_alignment_offset // "?")) | \(.workload) | \(.host_bytes / 1048576 | f(1)) | \(.page_programs) | \(.block_erases) | \(.rmw_subpage) | \(.rmw_straddle) | \(.straddle_per_page | f(3)) | \(.write_amplification | f(2)) | \(.gc_relocations) | \(.fio_bw_mib_s | f(1)) | \(.lat_p99_us | f(0)) |")
	' "$OUT/results.jsonl" >"$OUT/table.md"
}

# report_summary: per filesystem and workload, aligned vs misaligned cells (by
# alignpart's verdict): mean WA and straddling RMWs per page, and the WA ratio.
report_summary() {
	local fs w aw as mw ms ratio
	printf "%-6s %-10s | %-28s | %-28s | %s\n" fs workload \
		"aligned: WA, straddle/pg" "misaligned: WA, straddle/pg" "WA misaligned/aligned"
	jq -r -s '
	def mean: if length == 0 then null else add / length end;
	(reduce .[] as $r ([]; if any(.[]; . == $r.fs) then . else . + [$r.fs] end)) as $fss
	| (reduce .[] as $r ([]; if any(.[]; . == $r.workload) then . else . + [$r.workload] end)) as $wls
	| . as $all
	| $fss[] as $fs | $wls[] as $w
	| [$all[] | select(.fs == $fs and .workload == $w)] as $g
	| select($g | length > 0)
	| ($g | map(select(.alignpart_aligned))) as $a
	| ($g | map(select(.alignpart_aligned | not))) as $m
	| ($a | map(.write_amplification) | mean) as $aw
	| ($m | map(.write_amplification) | mean) as $mw
	| [$fs, $w, $aw, ($a | map(.straddle_per_page) | mean), $mw,
	   ($m | map(.straddle_per_page) | mean),
	   (if $aw != null and $mw != null and $aw > 0 then $mw / $aw else null end)]
	| map(if . == null then "-" else . end)
	| @tsv' "$OUT/results.jsonl" |
	while IFS=$'\t' read -r fs w aw as mw ms ratio; do
		printf "%-6s %-10s | %-28s | %-28s | %s\n" "$fs" "$w" "$(report_f2 "$aw"), $(report_f2 "$as")" \
			"$(report_f2 "$mw"), $(report_f2 "$ms")" "x$(report_f2 "$ratio")"
	done
}

# report_f2 NUMBER|-: two decimals.
report_f2() {
	if [ "$1" = - ]; then echo -; else printf '%.2f' "$1"; fi
}

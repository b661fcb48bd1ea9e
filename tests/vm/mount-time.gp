# Mount time against medium size (issue 15, docs/results.md).  Called by
# tests/vm/mount-time-run.sh with -e "dir='OUT'; term='png|svg'".
# Reads OUT/mount-time.dat: MiB, JFFS2, UBI+UBIFS, ublk-flash engine open (roll-forward, clean,
# --scan), then `serve` wall times (roll-forward, clean, --scan); seconds.
if (term eq 'png') {
	set terminal pngcairo size 1000,640 font 'DejaVu Sans,11' noenhanced
} else {
	set terminal svg size 1000,640 font 'DejaVu Sans,11' noenhanced dynamic
}
set output dir.'/mount-time.'.term
set title 'Mount / open time of a NAND medium after the same file workload (25 % of it in files; qemu TCG guest, kernel 6.12)'
set xlabel 'medium size (MiB; 4 KiB pages, 256 KiB erase blocks)'
set ylabel 'seconds'
set key left top
set grid lc rgb '#cccccc'
set logscale x 2
set xtics (16, 32, 64, 128, 256, 512, 1024)
set xrange [26:620]
set yrange [0:*]
set datafile missing '?'
f = dir.'/mount-time.dat'
plot f using 1:2 with linespoints lw 2 pt 7 lc rgb '#c0392b' title 'JFFS2 mount (erase-block summaries: CONFIG_JFFS2_SUMMARY=y)', \
     f using 1:3 with linespoints lw 2 pt 5 lc rgb '#2980b9' title 'UBI attach (no fastmap) + UBIFS mount', \
     f using 1:6 with linespoints lw 2 pt 11 lc rgb '#7f8c8d' title 'ublk-flash open --scan (reads every page OOB)', \
     f using 1:4 with linespoints lw 2 pt 9 lc rgb '#8e44ad' title 'ublk-flash open after kill -9 (checkpoint + roll-forward)', \
     f using 1:5 with linespoints lw 2 pt 13 lc rgb '#27ae60' title 'ublk-flash open, clean checkpoint', \
     f using 1:8 with linespoints lw 1 dt 2 pt 13 lc rgb '#27ae60' title 'ublk-flash serve, clean (process + engine + ublk device)'

# make compare: one figure, three panels, bars per cell grouped by workload.
# Called by tests/compare/run with
#   -e "dir='OUT'; term='png|svg'; colors='#rgb ...'; page='4 KiB'; subtitle='...'".
# Reads OUT/plot-<metric>.dat: a header of quoted cell labels, then one row per workload.
if (term eq 'png') {
	set terminal pngcairo size 1400,1300 font 'DejaVu Sans,11' noenhanced
} else {
	set terminal svg size 1400,1300 font 'DejaVu Sans,11' noenhanced dynamic
}
set output dir.'/plot.'.term

set datafile missing '?'
set style data histograms
set style histogram clustered gap 1.5
set style fill solid 0.9 border rgb '#333333'
set boxwidth 0.9
set grid ytics lc rgb '#cccccc'
set yrange [0:*]
set key outside right top vertical Left reverse samplen 1.5 width 1
set xtics nomirror scale 0
set lmargin 12

ncols(f) = system('head -n 1 '.f.' | grep -o "\"[^\"]*\"" | wc -l')

set multiplot layout 3,1 title 'Cost of partition alignment on emulated flash with '.page.' pages ('.subtitle.')' font ',13'

f = dir.'/plot-write_amplification.dat'
n = ncols(f)
set title 'Write amplification (flash bytes programmed / host bytes written; lower is better)'
set ylabel 'WA'
plot for [i=2:n] f using i:xtic(1) title columnheader(i) lc rgb word(colors, i-1)

f = dir.'/plot-straddle_per_page.dat'
set title 'Straddling read-modify-writes per flash page ('.page.') of host writes (0 = no write crossed a page boundary)'
set ylabel 'straddle RMW / page'
plot for [i=2:n] f using i:xtic(1) title columnheader(i) lc rgb word(colors, i-1)

f = dir.'/plot-fio_bw_mib_s.dat'
set title 'fio write throughput (higher is better; noisy on a shared machine)'
set ylabel 'MiB/s'
plot for [i=2:n] f using i:xtic(1) title columnheader(i) lc rgb word(colors, i-1)

unset multiplot

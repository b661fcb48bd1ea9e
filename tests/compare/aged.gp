# make compare --aged: three figures from OUT/aged-*.dat (tests/compare/lib/aged.sh).
# Called with -e "dir='OUT'; term='png|svg'; ncells=N; subtitle='...'".
#   aged-wa.dat:    "label" fs_wa device_wa total_wa   (one row per cell)
#   aged-hist.dat:  per cell a block (two blank lines apart): bucket centre, blocks, width
#   aged-wear.dat:  one row per cell: erase count per data block (wear-map cells)
#   aged-labels.txt: one label per cell
if (term eq 'png') {
	set terminal pngcairo size 1400,800 font 'DejaVu Sans,11' noenhanced
} else {
	set terminal svg size 1400,800 font 'DejaVu Sans,11' noenhanced dynamic
}
# optional: what='...' names the run in the titles (default: the aged device)
if (!exists("what")) what = 'on the aged device'
label(i) = system(sprintf("sed -n '%dp' '%s/aged-labels.txt'", i, dir))

# 1. WA split per cell
set output dir.'/aged-wa.'.term
set title "Write amplification ".what.": filesystem WA (host/app) x device WA (flash/host) = total WA\n".subtitle font ',13'
set style data histograms
set style histogram clustered gap 1.5
set style fill solid 0.9 border rgb '#333333'
set boxwidth 0.9
set grid ytics lc rgb '#cccccc'
set yrange [0:*]
set xtics rotate by -35 nomirror scale 0
set key outside right top vertical Left reverse
set ylabel 'write amplification'
set bmargin 10
plot dir.'/aged-wa.dat' using 2:xtic(1) title 'filesystem WA (host/app)' lc rgb '#2c7fb8', \
     '' using 3 title 'device WA (flash/host)' lc rgb '#d95f02', \
     '' using 4 title 'total WA (flash/app)' lc rgb '#7570b3'
unset output

# 2. erase-count histograms, one panel per cell
reset
if (term eq 'png') {
	set terminal pngcairo size 1400,1000 font 'DejaVu Sans,10' noenhanced
} else {
	set terminal svg size 1400,1000 font 'DejaVu Sans,10' noenhanced dynamic
}
set output dir.'/aged-erase-hist.'.term
cols = 3
rows = int((ncells + cols - 1) / cols)
set multiplot layout rows,cols title 'Erase-count distribution of the blocks '.what.' ('.subtitle.')' font ',13'
set style fill solid 0.8 border rgb '#333333'
set grid ytics lc rgb '#cccccc'
set yrange [0:*]
set xlabel 'erase count'
set ylabel 'blocks'
do for [i=1:ncells] {
	set title label(i)
	plot dir.'/aged-hist.dat' index (i-1) using 1:2:3 with boxes notitle lc rgb '#1b9e77'
}
unset multiplot
unset output

# 3. wear map: erase count per block, one heat strip per cell
reset
if (term eq 'png') {
	set terminal pngcairo size 1400,(200 + 40 * ncells) font 'DejaVu Sans,10' noenhanced
} else {
	set terminal svg size 1400,(200 + 40 * ncells) font 'DejaVu Sans,10' noenhanced dynamic
}
set output dir.'/aged-wear.'.term
set title 'Wear map: erase count per flash block (block order) '.what.' ('.subtitle.')' font ',13'
set palette defined (0 '#ffffcc', 1 '#fd8d3c', 2 '#bd0026', 3 '#400010')
set cblabel 'erase count'
set xlabel 'data block'
set yrange [ncells-0.5:-0.5]
set ytics ()
do for [i=1:ncells] { set ytics add (label(i) i-1) }
set lmargin 30
set tics nomirror scale 0
set autoscale xfix
plot dir.'/aged-wear.dat' matrix with image notitle
unset output

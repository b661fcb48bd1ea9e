#!/usr/bin/env bash
# make deb: build octant's Debian packages from the tree as from a clean clone, and lint them.
#   mk/deb.sh [OUTDIR]        (default $BUILD/deb, BUILD default build)
# The files git knows (tracked, and new ones not ignored; every file when this is no git
# checkout) are copied to OUTDIR/src/octant-VERSION, where `dpkg-buildpackage -us -uc -b`
# runs (so nothing of build/ or of an earlier package build is used, and the tree is left
# as it was).  The .debs, .changes and .buildinfo land in OUTDIR; then `lintian` on the
# .changes must report no error and no warning (explained ones are in
# debian/*.lintian-overrides).  Prints the .debs, one a line.
# Exit: 0 built and lint-clean; 1 the build failed (OUTDIR/build.log) or lintian complained.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-build}
case "$build" in /*) ;; *) build=$top/$build ;; esac
out=${1:-$build/deb}
case "$out" in /*) ;; *) out=$PWD/$out ;; esac
version=$(dpkg-parsechangelog -l "$top/debian/changelog" -S Version)
src=$out/src/octant-$version

rm -rf "$out"
mkdir -p "$src"
if git -C "$top" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	(cd "$top" && git ls-files -z --cached --others --exclude-standard |
	 while IFS= read -r -d '' f; do [ -e "$f" ] || [ -L "$f" ] && printf '%s\0' "$f"; done |
	 cpio --quiet -0 -pdm "$src")
else
	(cd "$top" && find . -path ./build -prune -o -path ./debian/build -prune -o -print0 |
	 cpio --quiet -0 -pdm "$src")
fi

t0=$(date +%s)
# both cores unless told otherwise (DEB_BUILD_OPTIONS=parallel=N)
export DEB_BUILD_OPTIONS=${DEB_BUILD_OPTIONS-parallel=2}
if ! (cd "$src" && dpkg-buildpackage -us -uc -b) >"$out/build.log" 2>&1; then
	tail -n 30 "$out/build.log" >&2
	echo "deb: dpkg-buildpackage failed (whole log: $out/build.log)" >&2
	exit 1
fi
mv "$out"/src/*.deb "$out"/src/*.changes "$out"/src/*.buildinfo "$out"/
rm -rf "$out/src"
echo "deb: built in $(( $(date +%s) - t0 ))s: $(cd "$out" && echo *.deb)" >&2

changes=$(ls "$out"/*.changes)
rc=0
# (as nobody when root: lintian warns that root should not run it)
asuser=()
[ "$(id -u)" -eq 0 ] && id nobody >/dev/null 2>&1 && asuser=(runuser -u nobody -- env HOME=/tmp)
"${asuser[@]}" lintian --fail-on error,warning --info --display-info "$changes" >"$out/lintian.log" 2>&1 || rc=$?
if [ $rc -ne 0 ]; then
	cat "$out/lintian.log" >&2
	echo "deb: lintian reports errors or warnings (above; $out/lintian.log)" >&2
	exit 1
fi
echo "deb: lintian: no error, no warning$( [ -s "$out/lintian.log" ] && echo "; it says:" || echo ", nothing else")" >&2
sed 's/^/deb:   /' "$out/lintian.log" >&2
ls "$out"/*.deb

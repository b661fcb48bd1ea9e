#!/usr/bin/env bash
# Debian packages newer than the host's Debian 12 -- from trixie-backports and trixie --
# fetched with the host's own apt through a PRIVATE source list and state: nothing is
# installed, and the host's apt configuration and lists are not touched.  Used by the build
# (the ublk uapi header, docs/ublk.md) and by tests/vm/prepare.sh (the 7.3 guest kernel, the
# sources and liburing kublk is built from; docs/vm.md).
# usage:
#   mk/apt-private.sh download DIR PKG[=VERSION]...  the .debs into DIR (kept there: a cache;
#                                                    a package already in DIR is not fetched)
#   mk/apt-private.sh version PKG PREFIX             the newest version of PKG that starts
#                                                    with PREFIX (e.g. linux-libc-dev 7.3.4-)
#   mk/apt-private.sh uapi VERSION OUTDIR            OUTDIR/linux/ublk_cmd.h from the
#                                                    linux-libc-dev of kernel VERSION (7.3.4)
# Env: OCTANT_APT_DIR (default /var/cache/octant/apt): the private source list, lists and
#      package cache (debs/ holds what `uapi` fetched);
#      OCTANT_DEBIAN_MIRROR: the archive (default: the host's, from its apt sources);
#      OCTANT_APT_SUITES (default "trixie-backports trixie").
# Exit: 0; 77 the packages cannot be fetched ("SKIP: reason" on stderr); 2 usage; 1 other.
set -euo pipefail

die()  { echo "apt-private: $*" >&2; exit 1; }
skip() { echo "SKIP: $*" >&2; exit 77; }
usage() { sed -n '8,14p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

dir=${OCTANT_APT_DIR:-/var/cache/octant/apt}
suites=${OCTANT_APT_SUITES:-trixie-backports trixie}
mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial" "$dir/debs" 2>/dev/null ||
	skip "cannot create the private apt folder $dir (set OCTANT_APT_DIR)"
{ exec 8>>"$dir/.lock"; } 2>/dev/null || skip "the private apt folder $dir is not writable (set OCTANT_APT_DIR)"
flock 8                 # parallel builds and guests share the folder

# mirror: the archive the host's apt uses for bookworm (its lists, else its source files).
mirror() {
	local m=${OCTANT_DEBIAN_MIRROR:-}
	[ -n "$m" ] || m=$(apt-cache policy 2>/dev/null |
		awk '$3 ~ /^bookworm(-updates)?\/main$/ && $2 ~ /^https?:/ { print $2; exit }')
	[ -n "$m" ] || m=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
		awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) { print $i; exit } }' |
		grep -v security | head -n1 || true)
	[ -n "$m" ] || m=$(sed -n 's/^URIs:[[:space:]]*//p' /etc/apt/sources.list.d/*.sources 2>/dev/null |
		tr ' ' '\n' | grep -v security | grep -m1 '^https\?:' || true)
	[ -n "$m" ] || m=http://deb.debian.org/debian
	echo "${m%/}"
}

src=$dir/sources.list
want_src=$(for s in $suites; do
	echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $(mirror) $s main"
done)
[ "$(cat "$src" 2>/dev/null)" = "$want_src" ] || { echo "$want_src" >"$src"; rm -f "$dir/.updated"; }

APT=(-o "Dir::Etc::SourceList=$src" -o Dir::Etc::SourceParts=/dev/null
     -o "Dir::State::Lists=$dir/lists" -o "Dir::Cache=$dir/cache"
     -o "Dir::State::status=/dev/null" -o APT::Sandbox::User=root -q)

# update: refresh the private lists (once per fetch failure; never the host's).
# (apt-get update exits 0 when an index cannot be fetched: its lists must be there after it)
update() {
	local s ok=1
	apt-get "${APT[@]}" update >"$dir/.apt.err" 2>&1 || ok=0
	for s in $suites; do
		ls "$dir/lists/"*"_dists_${s}_main_binary-amd64_Packages"* >/dev/null 2>&1 || ok=0
	done
	[ $ok -eq 1 ] ||
		skip "cannot read the Debian archive's $suites lists from $(mirror): $(grep -m1 '^\(E:\|W:\|Err:\)' "$dir/.apt.err" || tail -n1 "$dir/.apt.err")"
	touch "$dir/.updated"
}
[ -e "$dir/.updated" ] || update

# fetch DIR PKG...: apt-get download into DIR; on failure refresh the lists and retry once.
fetch() {
	local to=$1; shift
	(cd "$to" && apt-get "${APT[@]}" download "$@" >/dev/null 2>"$dir/.apt.err") && return 0
	update
	(cd "$to" && apt-get "${APT[@]}" download "$@" >/dev/null 2>"$dir/.apt.err") ||
		skip "cannot fetch $* from $suites: $(grep -m1 '^E:' "$dir/.apt.err" || echo 'apt-get download failed')"
}

# have DIR PKG[=VER]: is the package (that version) already in DIR?
have() {
	local p=${2%%=*} v=
	case "$2" in *=*) v=${2#*=}; v=${v//:/%3a} ;; esac
	ls "$1/${p}_${v:-}"*.deb >/dev/null 2>&1
}

version() { # PKG PREFIX
	local v
	v=$(apt-cache "${APT[@]}" madison "$1" 2>/dev/null | awk -F' [|] ' -v p="$2" 'index($2, p) == 1 { print $2 }' |
	    sort -V | tail -n1 | tr -d ' ')
	if [ -z "$v" ]; then
		update
		v=$(apt-cache "${APT[@]}" madison "$1" 2>/dev/null | awk -F' [|] ' -v p="$2" 'index($2, p) == 1 { print $2 }' |
		    sort -V | tail -n1 | tr -d ' ')
	fi
	[ -n "$v" ] || skip "$suites carry no $1 of version $2*"
	echo "$v"
}

cmd=${1:-}; [ $# -gt 0 ] && shift
case "$cmd" in
download)
	[ $# -ge 2 ] || usage
	to=$1; shift
	mkdir -p "$to" || die "cannot create $to"
	need=()
	for p in "$@"; do have "$to" "$p" || need+=("$p"); done
	[ ${#need[@]} -eq 0 ] || fetch "$to" "${need[@]}"
	;;
version)
	[ $# -eq 2 ] || usage
	version "$1" "$2"
	;;
uapi)
	[ $# -eq 2 ] || usage
	kv=$1 out=$2
	deb=$(ls "$dir/debs/linux-libc-dev_$kv-"*.deb 2>/dev/null | sort -V | tail -n1 || true)
	if [ -z "$deb" ]; then
		v=$(version linux-libc-dev "$kv-")
		fetch "$dir/debs" "linux-libc-dev=$v"
		deb=$(ls "$dir/debs/linux-libc-dev_$kv-"*.deb | sort -V | tail -n1)
	fi
	mkdir -p "$out/linux" || die "cannot create $out/linux"
	dpkg-deb --fsys-tarfile "$deb" | tar -xO ./usr/include/linux/ublk_cmd.h >"$out/linux/ublk_cmd.h.tmp" ||
		die "$deb has no usr/include/linux/ublk_cmd.h"
	mv "$out/linux/ublk_cmd.h.tmp" "$out/linux/ublk_cmd.h"
	basename "$deb" .deb >"$out/ublk_cmd.h.from"
	;;
*) usage ;;
esac

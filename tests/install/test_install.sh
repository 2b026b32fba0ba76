#!/usr/bin/env bash
# After `meson install`, an application builds with
# `cc app.c $(pkg-config --cflags --libs mrail)` and runs under the
# installed mrail-run. Args: meson, build dir, source file of the app.
set -euo pipefail
meson=$1 build=$2 app=$3
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT
"$meson" install -C "$build" --no-rebuild --quiet --destdir "$dest" >/dev/null
pc=$(find "$dest" -name mrail.pc | head -n 1)
[ -n "$pc" ] || { echo "mrail.pc not installed"; exit 1; }
# The staged copy still names the real prefix: point it at the stage.
prefix=$(sed -n 's/^prefix=//p' "$pc")
sed -i "s|^prefix=.*|prefix=$dest$prefix|" "$pc"
export PKG_CONFIG_PATH=$(dirname "$pc")
flags=$(pkg-config --cflags --libs mrail)
libdir=$(pkg-config --variable=libdir mrail)
cc "$app" $flags -o "$dest/app"
run=$(find "$dest" -name mrail-run -type f | head -n 1)
LD_LIBRARY_PATH=$libdir "$run" -n 2 "$dest/app"
echo "installed library, header, pkg-config file and mrail-run work"

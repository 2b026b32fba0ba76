#!/usr/bin/env bash
# After `meson install`, an application builds with
# `cc app.c $(pkg-config --cflags --libs mrail)` and runs under the
# installed mrail-run; a strategy plugin builds with
# `cc -shared -fPIC $(pkg-config --cflags mrail)` (installed
# <mrail/strategy.h>, no libmrail source tree) and the installed engine
# loads it from MRAIL_STRATEGY_PATH and moves data with it.
# Args: meson, build dir, source of the app, source of the example plugin,
# source of the app run with the plugin.
set -euo pipefail
meson=$1 build=$2 app=$3 plugin=$4 plugin_app=$5
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

# Static: the installed libmrail.a (one object, only mrail_ symbols global)
# links with `pkg-config --static`; a directory holding only the archive
# comes first so -lmrail picks it, and the program must not need the .so.
[ -f "$libdir/libmrail.a" ] || { echo "libmrail.a not installed"; exit 1; }
leak=$(nm -g --defined-only "$libdir/libmrail.a" | awk 'NF >= 3 && $3 !~ /^mrail_/ {print $3}')
[ -z "$leak" ] || { echo "installed libmrail.a exports non-mrail_ symbols:"; echo "$leak"; exit 1; }
mkdir -p "$dest/static"
cp "$libdir/libmrail.a" "$dest/static/"
cc "$app" $(pkg-config --cflags mrail) -L"$dest/static" \
   $(pkg-config --static --libs mrail) -o "$dest/app-static"
if readelf -d "$dest/app-static" | grep -q 'NEEDED.*libmrail'; then
  echo "app-static still needs libmrail.so"; exit 1
fi
"$run" -n 2 "$dest/app-static"
echo "installed libmrail.a links statically with pkg-config --static"

# The plugin header is installed, self-contained, and found by pkg-config.
cflags=$(pkg-config --cflags mrail)
inc=$(pkg-config --variable=includedir mrail)
[ -f "$inc/mrail/strategy.h" ] || { echo "mrail/strategy.h not installed"; exit 1; }
printf '#include <mrail/strategy.h>\nint x = MRAIL_STRATEGY_ABI_VERSION;\n' |
  cc -std=c11 -Wall -Wextra -Werror $cflags -x c -c -o /dev/null -
# The example plugin, built from a copy outside the source tree.
mkdir -p "$dest/src" "$dest/plugins"
cp "$plugin" "$dest/src/example_strategy.c"
(cd "$dest/src" && cc -shared -fPIC -fvisibility=hidden -Wall -Wextra -Werror \
   $cflags -o "$dest/plugins/example.so" example_strategy.c)
cc "$plugin_app" $flags -o "$dest/plugin_app"
out=$(MRAIL_STRATEGY_PATH="$dest/plugins" MRAIL_STRATEGY=example \
      MRAIL_TCP_LOOPBACK_RAILS=2 MRAIL_INBAND_SAMPLING=0 MRAIL_LOG_LEVEL=info \
      LD_LIBRARY_PATH=$libdir "$run" -n 2 "$dest/plugin_app" 2>&1) || {
  echo "$out"; echo "plugin run failed"; exit 1; }
echo "$out" | grep -F "plugin_app: 1 MiB each way, chunks only on rail 1"
grep -qF "strategy 'example' loaded from $dest/plugins/example.so" <<<"$out" || {
  echo "$out"; echo "log does not show the plugin loaded"; exit 1; }
echo "installed <mrail/strategy.h>: an out-of-tree plugin builds with pkg-config, loads and moves data"

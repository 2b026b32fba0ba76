#!/bin/sh
# Build the installed libmrail.a from the internal archive: link every
# member into one relocatable object, make its hidden symbols local (the
# code is compiled with -fvisibility=hidden; the API is MRAIL_API), and
# archive that object alone. Release builds compile with fat LTO objects
# (meson.build): their LTO sections are dropped, the hidden symbols
# inside them would not be made local. Args: ld objcopy ar input.a output.a
set -eu
ld=$1 objcopy=$2 ar=$3 in=$4 out=$5
obj=${out%.a}.o
rm -f "$obj" "$out"
"$ld" -r -o "$obj" --whole-archive "$in" --no-whole-archive
"$objcopy" --localize-hidden --wildcard --remove-section='.gnu.lto_*' --remove-section='.gnu.debuglto_*' \
	--strip-symbol=__gnu_lto_slim --strip-symbol=__gnu_lto_v1 "$obj"
"$ar" rcsD "$out" "$obj"
rm -f "$obj"

#!/bin/sh
# gen_many_libs.sh DIR COUNT — writes COUNT tiny, distinct shared libraries
# (libmany_0001.so ...: each its own soname and exported function) into DIR,
# for the many_libs workload: a process with hundreds of mapped files, whose
# attach time the benchmark measures. Compiles in parallel, one gcc per file.
set -eu
[ $# -eq 2 ] || { echo "usage: $0 DIR COUNT" >&2; exit 2; }
dir=$1 count=$2
mkdir -p "$dir"
rm -f "$dir"/libmany_*.so
cat > "$dir/many_lib.c" <<'SRC'
/* One of many_libs' generated libraries: MANY_FN returns its own name. */
const char *MANY_FN(void);
const char *MANY_FN(void) { return MANY_NAME; }
SRC
seq -f '%04g' 1 "$count" | xargs -P "$(nproc)" -I{} \
	gcc -shared -fPIC -O1 -Wall -Werror -DMANY_FN=many_lib_{} -DMANY_NAME='"libmany_{}"' \
	-Wl,-soname,libmany_{}.so -o "$dir/libmany_{}.so" "$dir/many_lib.c"
rm -f "$dir/many_lib.c"
echo "gen_many_libs: $count libraries in $dir"

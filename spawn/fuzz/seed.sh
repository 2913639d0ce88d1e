#!/usr/bin/env bash
# Seeds the C fuzzers' corpora (corpus/ beside this script) from stored
# recipe entries, as runs with SANDBOX_EXECUTABLE_WARM=debug leave them
# under the state directory (as root /run/sandbox-executable/recipes):
#   spawn/fuzz/seed.sh /run/sandbox-executable/recipes/<key> ...
# Each entry (recipestore.h) seeds the store harness whole, behind the flag
# byte 0x0f (the harness makes length, magic, key and MAC its own), and
# the dependency and recipe harnesses with the first two parts of its body
# (recipestore.h's se_stored_split: u32 deps_len, u32 recipe_len, u32
# record_len, u32 0, then the parts 8-aligned).
set -euo pipefail
corpus=$(dirname "$0")/corpus
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
put() {
	local name
	name=$(sha1sum "$1" | cut -c1-40)
	mkdir -p "$corpus/$2"
	cp "$1" "$corpus/$2/$name"
}
for e in "$@"; do
	{ printf '\017'; cat "$e"; } >"$tmp/store"
	put "$tmp/store" store
	read -r dlen rlen _ < <(od -An -tu4 -j76 -N12 "$e")
	roff=$(((16 + dlen + 7) / 8 * 8))
	tail -c +$((76 + 16 + 1)) "$e" | head -c "$dlen" >"$tmp/deps"
	put "$tmp/deps" deps
	tail -c +$((76 + roff + 1)) "$e" | head -c "$rlen" >"$tmp/recipe"
	put "$tmp/recipe" recipe
done

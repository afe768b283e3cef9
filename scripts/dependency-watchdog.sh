#!/usr/bin/env bash
# Builds Gardener's dependency-watchdog (the weeder benchmark's reference) from
# its Go module into a cache outside the work tree, keyed by version; prints the
# binary's path. `go install ...@v1.7.0` asks the module proxy for the module's
# version list (to look for a deprecation notice), which some proxies refuse;
# downloading the one version and building it in place needs no list.
set -euo pipefail

VERSION=v1.7.0
cache=${TEND_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tend}
dir="$cache/dependency-watchdog-$VERSION"
bin="$dir/dependency-watchdog"

if [ -f "$dir/.complete" ]; then echo "$bin"; exit 0; fi
command -v go >/dev/null || { echo "dependency-watchdog: Go is required; none on PATH" >&2; exit 1; }

echo "dependency-watchdog: building $VERSION (first time only; several minutes on 2 cores)" >&2
src=$(cd "$(mktemp -d)" && go mod init tend.dev/tools/dwd >/dev/null 2>&1 &&
  go mod download -json "github.com/gardener/dependency-watchdog@$VERSION" | awk -F'"' '/"Dir"/ {print $4}')
tmp="$dir.tmp.$$"
rm -rf "$tmp"; mkdir -p "$tmp"
(cd "$src" && go build -trimpath -ldflags='-s -w' -o "$tmp/dependency-watchdog" .) || { rm -rf "$tmp"; exit 1; }
touch "$tmp/.complete"
rm -rf "$dir"; mv "$tmp" "$dir"
echo "$bin"

#!/usr/bin/env bash
# The container image, built and tried on a machine that can neither pull images nor run OCI containers
# (`podman run` is refused: the sandbox forbids setrlimit), with what does work here: buildah with chroot
# isolation. Too slow for `npm test` (about 2 to 5 minutes), so a command of its own, which CI runs.
#
#   1. A stand-in for the base image, docker.io/library/node:24-bookworm-slim: Debian bookworm from debootstrap
#      (minbase, the machine's own Debian mirror), Node 24 from the `node` npm package (the binary
#      node_modules/.bin/node runs), npm and corepack from the npm registry, laid out as the official image lays
#      them out (/usr/local/bin, /usr/local/lib/node_modules, the `node` user with uid 1000, the
#      docker-entrypoint.sh entrypoint). Kept between runs, as an image labelled coffer.stand-in and as a tarball
#      of the Debian tree under $COFFER_IMAGE_CACHE; a real image of that name (no such label) is used as it is.
#   2. The project's Containerfile, unchanged, built against it: `buildah bud --pull=never --isolation chroot`.
#   3. test/container/image.check.ts (node --test) starts the server in the built image and uses it over
#      127.0.0.1 only.
#   4. The built image and every container made from it are removed, whatever happened.
#
# Usage: test/container/run.sh [--clean]   (--clean: also remove the stand-in base and the cache, then stop)
# COFFER_IMAGE_CONTEXT=DIR builds another tree than this one (a `git archive` of a commit, say); the check
# still runs from this one. Root only (debootstrap, buildah's storage). Every step is bounded in time.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
CONTEXT=${COFFER_IMAGE_CONTEXT:-$ROOT}
CACHE=${COFFER_IMAGE_CACHE:-/var/cache/coffer-image-check}
BASE=docker.io/library/node:24-bookworm-slim
IMAGE=localhost/coffer-image-check:$$
PREFIX=coffer-image-check-$$
NODE=$ROOT/node_modules/.bin/node
# The version of npm the stand-in carries (Node 24's own is an 11.x).
NPM_SPEC=${COFFER_IMAGE_NPM:-npm@11}

say() { printf '[image %s] %s\n' "$(date -u +%H:%M:%S)" "$*"; }
fail() {
  say "$*" >&2
  exit 1
}

[ "$(id -u)" = 0 ] || fail 'run as root: debootstrap and buildah storage need it'
[ -x "$NODE" ] || fail "no $NODE: run npm ci first"

if [ "${1:-}" = --clean ]; then
  for image in $(buildah images --noheading --filter label=coffer.stand-in --format '{{.ID}}' 2>/dev/null); do
    buildah rmi -f "$image" >/dev/null
  done
  rm -rf "$CACHE"
  say "removed the stand-in base image and $CACHE"
  exit 0
fi

if ! command -v buildah >/dev/null || ! command -v debootstrap >/dev/null; then
  say 'installing buildah and debootstrap'
  timeout 300 apt-get update -qq
  DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -qq buildah debootstrap >/dev/null
fi

# The docker context's ignore file is the same as podman's.
cmp -s "$CONTEXT/.containerignore" "$CONTEXT/.dockerignore" || fail '.dockerignore differs from .containerignore: make them the same'

cleanup() {
  local status=$?
  set +e
  for ctr in $(buildah containers --noheading --format '{{.ContainerName}}' 2>/dev/null | grep "^$PREFIX"); do
    buildah rm "$ctr" >/dev/null 2>&1
  done
  buildah rmi -f "$IMAGE" >/dev/null 2>&1
  exit "$status"
}
trap cleanup EXIT

# The machine's Debian mirror for bookworm: deb822 files (sources.list.d/*.sources), or one-line ones.
mirror() {
  local file
  for file in /etc/apt/sources.list.d/*.sources; do
    [ -f "$file" ] || continue
    awk '
      BEGIN { RS = ""; FS = "\n" }
      {
        uri = ""; suites = ""; types = ""; enabled = "yes"
        for (i = 1; i <= NF; i++) {
          if ($i ~ /^URIs:/) { uri = $i; sub(/^URIs:[ \t]*/, "", uri); sub(/[ \t].*$/, "", uri) }
          if ($i ~ /^Suites:/) suites = " " $i " "
          if ($i ~ /^Types:/) types = " " $i " "
          if ($i ~ /^Enabled:/) { enabled = $i; sub(/^Enabled:[ \t]*/, "", enabled) }
        }
        if (uri != "" && suites ~ / bookworm / && types ~ / deb / && enabled != "no") { print uri; exit }
      }' "$file"
  done
  for file in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$file" ] || continue
    awk '$1 == "deb" { i = 2; if ($2 ~ /^\[/) { while ($i !~ /\]$/) i++; i++ } if ($(i + 1) == "bookworm") { print $i; exit } }' "$file"
  done
}

# Step 1: the stand-in base image.
node_bin=$("$NODE" -p 'process.execPath')
node_version=$("$NODE" -p 'process.versions.node')
[ "$(head -c 4 "$node_bin" | od -An -c | tr -d ' ')" = '177ELF' ] || fail "$node_bin is not Node's binary"
mkdir -p "$CACHE"
if ! ls "$CACHE"/npm-*.tgz >/dev/null 2>&1 || ! ls "$CACHE"/corepack-*.tgz >/dev/null 2>&1; then
  say "fetching $NPM_SPEC and corepack from the npm registry"
  (cd "$CACHE" && timeout 120 npm pack --silent "$NPM_SPEC" corepack >/dev/null)
fi
npm_tgz=$(ls "$CACHE"/npm-*.tgz | head -1)
corepack_tgz=$(ls "$CACHE"/corepack-*.tgz | head -1)
key="node-$node_version+$(basename "$npm_tgz" .tgz)+$(basename "$corepack_tgz" .tgz)+layout-1"

# Its labels ("map[...]"), or nothing when there is no such image.
existing=$(buildah inspect --type image --format '{{.Docker.Config.Labels}}' "$BASE" 2>/dev/null || true)
if [ -n "$existing" ] && ! grep -q 'coffer.stand-in' <<<"$existing"; then
  say "$BASE exists and is no stand-in: building against it as it is"
elif grep -q "coffer.stand-in:$key" <<<"$existing"; then
  say "stand-in $BASE ($key) is already here"
else
  [ -n "$existing" ] && buildah rmi -f "$BASE" >/dev/null
  rootfs_tar=$CACHE/bookworm-minbase.tar
  if [ ! -s "$rootfs_tar" ]; then
    url=$(mirror | head -1)
    [ -n "$url" ] || fail 'no Debian mirror for bookworm in /etc/apt/sources.list{,.d}'
    say "debootstrap --variant=minbase bookworm from $url"
    work=$(mktemp -d "$CACHE/debootstrap.XXXXXX")
    if ! timeout 900 debootstrap --variant=minbase bookworm "$work/rootfs" "$url" >"$work/log" 2>&1; then
      tail -20 "$work/log" >&2
      rm -rf "$work"
      fail 'debootstrap failed'
    fi
    # As slim as the official image: no package lists nor downloaded packages.
    rm -rf "$work"/rootfs/var/lib/apt/lists/* "$work"/rootfs/var/cache/apt/archives/*.deb \
      "$work"/rootfs/var/cache/apt/*.bin
    tar -C "$work/rootfs" -cf "$rootfs_tar.partial" .
    mv "$rootfs_tar.partial" "$rootfs_tar"
    rm -rf "$work"
  fi
  say "making the stand-in $BASE ($key)"
  ctr=$(buildah from --name "$PREFIX-base" scratch)
  mnt=$(buildah mount "$ctr")
  tar -C "$mnt" -xf "$rootfs_tar"
  install -m 0755 "$node_bin" "$mnt/usr/local/bin/node"
  mkdir -p "$mnt/usr/local/lib/node_modules/npm" "$mnt/usr/local/lib/node_modules/corepack"
  tar -C "$mnt/usr/local/lib/node_modules/npm" --strip-components=1 --no-same-owner -xzf "$npm_tgz"
  tar -C "$mnt/usr/local/lib/node_modules/corepack" --strip-components=1 --no-same-owner -xzf "$corepack_tgz"
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$mnt/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$mnt/usr/local/bin/npx"
  ln -s ../lib/node_modules/corepack/dist/corepack.js "$mnt/usr/local/bin/corepack"
  # The official image's entrypoint: a first argument that is no command is given to node.
  cat >"$mnt/usr/local/bin/docker-entrypoint.sh" <<'EOF'
#!/bin/sh
set -e

# Run command with node if the first argument contains a "-" or is not a system command. The last
# part inside the "{}" is a workaround for the following bug in ash/dash:
# https://bugs.debian.org/cgi-bin/bugreport.cgi?bug=874264
if [ "${1#-}" != "${1}" ] || [ -z "$(command -v "${1}")" ] || { [ -f "${1}" ] && ! [ -x "${1}" ]; }; then
  set -- node "$@"
fi

exec "$@"
EOF
  chmod 0755 "$mnt/usr/local/bin/docker-entrypoint.sh"
  chroot "$mnt" /bin/sh -c 'groupadd --gid 1000 node && useradd --uid 1000 --gid node --shell /bin/bash --create-home node'
  chroot "$mnt" /usr/local/bin/node --version >/dev/null
  buildah umount "$ctr" >/dev/null
  buildah config \
    --env NODE_VERSION="$node_version" \
    --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --entrypoint '["docker-entrypoint.sh"]' --cmd node \
    --label coffer.stand-in="$key" "$ctr"
  buildah commit --quiet --rm --format docker "$ctr" "$BASE" >/dev/null
fi

# Step 2: the project's Containerfile, as is. Where the machine's npm trusts a CA of its own (a proxy that
# inspects TLS, as here), its RUN steps see the same, through mounts that live only while they run: the CA
# bundle, and npm's global configuration naming it. Of those only their mount points stay in the image, empty.
build_mounts=()
cafile=$(npm config get cafile 2>/dev/null || true)
if [ -n "$cafile" ] && [ "$cafile" != null ] && [ -f "$cafile" ]; then
  printf 'cafile=/etc/coffer-build-ca.crt\n' >"$CACHE/build-npmrc"
  build_mounts=(-v "$cafile:/etc/coffer-build-ca.crt:ro" -v "$CACHE/build-npmrc:/usr/local/etc/npmrc:ro")
fi
say "building $IMAGE from Containerfile"
started=$(date +%s)
timeout 1200 buildah bud --quiet --pull=never --isolation chroot --format docker "${build_mounts[@]}" \
  -f "$CONTEXT/Containerfile" -t "$IMAGE" "$CONTEXT" \
  >"$CACHE/build.log" 2>&1 || {
  tail -40 "$CACHE/build.log" >&2
  fail "the build failed (its log: $CACHE/build.log)"
}
say "built in $(($(date +%s) - started)) s; $(buildah images --noheading --format '{{.Size}}' "$IMAGE")"

# Step 3: the server in the image.
COFFER_IMAGE=$IMAGE COFFER_CONTAINER_PREFIX=$PREFIX timeout 600 "$NODE" --test --test-timeout=480000 \
  test/container/image.check.ts

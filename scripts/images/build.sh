#!/usr/bin/env bash
# Local container images for the containerised test targets, built from Debian packages with no
# image registry: a Debian root file system (scripts/setup/chroot.sh, the recipe the local
# targets use) imported with `docker import`, then saved as a tarball in the cache directory.
#
#   scripts/images/build.sh [--rebuild] [TARGET...]   TARGET: pg15 pg19 mysql97 mariadb1011
#                                                     (default: all four)
#   scripts/images/build.sh --print-env [TARGET...]   the TIDEMARK_TC_IMAGE_* exports for them
#
#   target       image                        from
#   pg15         tidemark-local/postgres:15   Debian bookworm postgresql-15
#   pg19         tidemark-local/postgres:19   postgresql-19 from experimental, in sid (the local
#                                             pg19 target's chroot, scripts/setup/pg19-chroot.sh)
#   mysql97      tidemark-local/mysql:9.7     sid mysql-server-core + mysql-client-core (the local
#                                             mysql97 target's chroot, scripts/setup/mysql97-chroot.sh)
#   mariadb1011  tidemark-local/mariadb:10.11 bookworm mariadb-server-core + mariadb-client-core
#
# For each target, the first of these that applies:
#   1. the engine has the image, built from this recipe: nothing to do;
#   2. ${TIDEMARK_CACHE_DIR:-$HOME/.cache/tidemark}/images/<target>-<recipe>.tar.gz exists:
#      `docker load` it;
#   3. otherwise build it (root file system, `docker import`, a few directories and users), then
#      `docker save | gzip` it there. <recipe> is a hash of the scripts that make the image, so
#      changing them rebuilds it; --rebuild forces a build.
# The bookworm root file systems (pg15, mariadb1011) are built for the image and deleted after
# it is saved; the sid ones are the local targets' chroots and stay.
#
# The images carry binaries, users, directories and PATH, and no entrypoint logic: whoever starts
# them brings the commands (the testcontainers provider and the compose files in docker/ do).
#
#   postgres images: user postgres; PATH includes /usr/lib/postgresql/<major>/bin;
#                    PGDATA=/var/lib/postgresql/data (its parent owned by postgres); CMD bash.
#   mysql, mariadb:  user mysql; /var/lib/mysql, /var/lib/mysql-files (MySQL's default
#                    secure-file-priv) and /run/mysqld owned by mysql; CMD bash.
#
# Needs a running Docker engine, and root to build (debootstrap, chroot; loading does not).
# Environment: TIDEMARK_CACHE_DIR, TIDEMARK_DEBIAN_MIRROR (as for scripts/setup/chroot.sh).
set -euo pipefail
exec </dev/null
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SETUP="$(cd "$HERE/../setup" && pwd)"
CACHE_DIR="${TIDEMARK_CACHE_DIR:-$HOME/.cache/tidemark}"
IMAGES_DIR="$CACHE_DIR/images"
ALL_TARGETS=(pg15 pg19 mysql97 mariadb1011)

say() { printf '[images] %s\n' "$*" >&2; }
die() { printf '[images] error: %s\n' "$*" >&2; exit 1; }
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f s", b - a }'; }

image_of() {
  case "$1" in
    pg15) echo tidemark-local/postgres:15 ;;
    pg19) echo tidemark-local/postgres:19 ;;
    mysql97) echo tidemark-local/mysql:9.7 ;;
    mariadb1011) echo tidemark-local/mariadb:10.11 ;;
    *) die "unknown target '$1' (known: ${ALL_TARGETS[*]})" ;;
  esac
}

# Files excluded from every image: runtime directories, documentation, apt's caches.
EXCLUDES=(
  './proc/*' './sys/*' './dev/*' './run/*' './tmp/*' './var/tmp/*'
  './usr/share/doc/*' './usr/share/man/*' './usr/share/info/*' './usr/share/locale/*'
  './usr/share/lintian/*' './var/lib/apt/lists/*' './var/cache/apt/*' './var/log/apt/*'
  './var/log/*.log'
)

# What decides an image's content: the root file system's recipe (the chroot scripts, and the
# arguments given to chroot.sh here), the exclusions, the customisation and the image settings.
# Other edits of this script (messages, caching) do not rebuild images.
recipe_of() {
  {
    cat "$SETUP/chroot.sh" "$SETUP/lib.sh"
    case "$1" in
      pg19) cat "$SETUP/pg19-chroot.sh" ;;
      mysql97) cat "$SETUP/mysql97-chroot.sh" ;;
    esac
    declare -f rootfs_of
    printf '%s\n' "${EXCLUDES[@]}"
    customise_script "$1"
    image_changes "$1" ''
  } | sha256sum | cut -c1-12
}

# Build (once) the root file system of a target; prints its directory.
rootfs_of() {
  case "$1" in
    pg15)
      bash "$SETUP/chroot.sh" --name image-pg15 --suite bookworm --user postgres \
        --prepare 'mkdir -p /etc/postgresql-common/createcluster.d && echo "create_main_cluster = false" > /etc/postgresql-common/createcluster.d/tidemark.conf' \
        postgresql-15 >&2
      echo "$CACHE_DIR/chroot-image-pg15" ;;
    mariadb1011)
      bash "$SETUP/chroot.sh" --name image-mariadb1011 --suite bookworm --user mysql \
        mariadb-server-core mariadb-client-core >&2
      echo "$CACHE_DIR/chroot-image-mariadb1011" ;;
    pg19)
      bash "$SETUP/pg19-chroot.sh" >&2
      echo "$CACHE_DIR/chroot-pg19" ;;
    mysql97)
      bash "$SETUP/mysql97-chroot.sh" >&2
      echo "$CACHE_DIR/chroot-mysql97" ;;
  esac
}

# Built for the image only (the sid chroots belong to the local targets and stay).
image_only_rootfs() { case "$1" in pg15 | mariadb1011) return 0 ;; *) return 1 ;; esac; }

# What the image needs beyond the packages, run as root inside a container of the imported tree.
customise_script() {
  case "$1" in
    pg15 | pg19) echo 'set -e
mkdir -p /var/lib/postgresql /var/run/postgresql
chown postgres:postgres /var/lib/postgresql /var/run/postgresql' ;;
    mysql97 | mariadb1011) echo 'set -e
mkdir -p /var/lib/mysql /var/lib/mysql-files /run/mysqld
chown mysql:mysql /var/lib/mysql /var/lib/mysql-files /run/mysqld
chmod 750 /var/lib/mysql /var/lib/mysql-files' ;;
  esac
}

image_changes() { # $1 target, $2 recipe: `docker commit -c` arguments, one per line
  case "$1" in
    pg15 | pg19)
      local major="${1#pg}"
      echo "ENV PATH=/usr/lib/postgresql/$major/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
      echo "ENV PGDATA=/var/lib/postgresql/data"
      echo "USER postgres" ;;
    mysql97 | mariadb1011)
      echo "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
      echo "USER mysql" ;;
  esac
  echo "ENV LANG=C.UTF-8"
  echo "ENV TIDEMARK_IMAGE_RECIPE=$2"
  echo "WORKDIR /tmp"
  echo 'CMD ["bash"]'
}

# The recipe hash of the image the engine has under that name ('' if none).
engine_recipe() {
  docker image inspect --format '{{range .Config.Env}}{{println .}}{{end}}' "$1" 2>/dev/null |
    sed -n 's/^TIDEMARK_IMAGE_RECIPE=//p' || true
}

build_image() { # $1 target, $2 image, $3 recipe
  local target="$1" image="$2" recipe="$3" t rootfs base cid
  [ "$(id -u)" = 0 ] || die "$target: building needs root (debootstrap and chroot make the root file system)"
  t=$(date +%s.%N)
  rootfs=$(rootfs_of "$target")
  [ -d "$rootfs" ] || die "$target: no root file system at $rootfs"
  say "$target: root file system ready in $(elapsed "$t") ($rootfs)"

  t=$(date +%s.%N)
  base="$image-import"
  # --one-file-system: the local pg19 target may keep a tmpfs mounted on the chroot's /dev/shm.
  local excludes=() pattern
  for pattern in "${EXCLUDES[@]}"; do excludes+=(--exclude="$pattern"); done
  tar -C "$rootfs" --one-file-system --numeric-owner -c "${excludes[@]}" \
    . | docker import - "$base" >/dev/null
  say "$target: imported in $(elapsed "$t")"

  t=$(date +%s.%N)
  cid=$(docker create --user root "$base" bash -c "$(customise_script "$target")")
  local changes=() line
  while IFS= read -r line; do changes+=(-c "$line"); done < <(image_changes "$target" "$recipe")
  if ! docker start -a "$cid" >&2; then
    docker rm -f "$cid" >/dev/null
    die "$target: customising the image failed"
  fi
  docker commit "${changes[@]}" "$cid" "$image" >/dev/null
  docker rm "$cid" >/dev/null
  docker rmi "$base" >/dev/null
  say "$target: $image committed in $(elapsed "$t")"
}

ensure_image() { # $1 target
  local target="$1" image recipe tarball t have
  image=$(image_of "$target")
  recipe=$(recipe_of "$target")
  tarball="$IMAGES_DIR/$target-$recipe.tar.gz"
  mkdir -p "$IMAGES_DIR"
  exec 8>"$IMAGES_DIR/$target.lock"
  flock 8

  have=$(engine_recipe "$image")
  if [ "$REBUILD" = 0 ] && [ "$have" = "$recipe" ]; then
    say "$target: $image present (recipe $recipe)"
  elif [ "$REBUILD" = 0 ] && [ -f "$tarball" ]; then
    t=$(date +%s.%N)
    docker load -i "$tarball" >/dev/null
    [ "$(engine_recipe "$image")" = "$recipe" ] || die "$target: $tarball did not hold $image of recipe $recipe"
    say "$target: $image loaded from $tarball in $(elapsed "$t")"
  else
    t=$(date +%s.%N)
    build_image "$target" "$image" "$recipe"
    local t2
    t2=$(date +%s.%N)
    docker save "$image" | gzip -1 >"$tarball.tmp"
    mv "$tarball.tmp" "$tarball"
    find "$IMAGES_DIR" -maxdepth 1 -name "$target-*.tar.gz" ! -name "$(basename "$tarball")" -delete
    say "$target: saved $tarball ($(du -h "$tarball" | cut -f1)) in $(elapsed "$t2")"
    if image_only_rootfs "$target"; then
      rm -rf --one-file-system "$CACHE_DIR/chroot-image-$target"
    fi
    say "$target: $image built in $(elapsed "$t") ($(docker image inspect --format '{{.Size}}' "$image" | awk '{ printf "%d MB", $1 / 1e6 }'))"
  fi
  flock -u 8
}

REBUILD=0
PRINT_ENV=0
TARGETS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --rebuild) REBUILD=1 ;;
    --print-env) PRINT_ENV=1 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option $1" ;;
    *) image_of "$1" >/dev/null; TARGETS+=("$1") ;;
  esac
  shift
done
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=("${ALL_TARGETS[@]}")

if [ "$PRINT_ENV" = 1 ]; then
  for target in "${TARGETS[@]}"; do
    echo "export TIDEMARK_TC_IMAGE_$(echo "$target" | tr '[:lower:]' '[:upper:]')=$(image_of "$target")"
  done
  exit 0
fi

docker info >/dev/null 2>&1 || die "no Docker engine answers (docker info failed); start dockerd first"

T_ALL=$(date +%s.%N)
for target in "${TARGETS[@]}"; do ensure_image "$target"; done
say "done in $(elapsed "$T_ALL"): $(for t in "${TARGETS[@]}"; do printf '%s ' "$(image_of "$t")"; done)"

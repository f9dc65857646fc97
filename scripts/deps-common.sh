# shellcheck shell=bash
# Shared by scripts/install-arm64-deps.sh and scripts/install-system-deps.sh (sourced, not run): the apt step
# (install what dpkg does not list as installed) and the binfmt step (mount binfmt_misc where a container left it
# unmounted, enable QEMU's handlers). The caller sets DEPS_NAME for its messages; each fails in one line, exit 1.
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
export DEBIAN_FRONTEND=noninteractive

fail() {
  echo "${DEPS_NAME:-install-deps}: $*" >&2
  exit 1
}

# apt_install_missing PACKAGE…: installs the packages dpkg does not list as installed (one apt-get update first).
apt_install_missing() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  if ((${#missing[@]})); then
    echo "installing: ${missing[*]}"
    $SUDO apt-get update -qq || fail "apt-get update failed"
    $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
      fail "apt-get install failed for: ${missing[*]}"
  fi
}

# binfmt_mount WHY: mounts binfmt_misc when it is not; WHY says what cannot be done without it.
binfmt_mount() {
  if [ ! -e /proc/sys/fs/binfmt_misc/status ]; then
    $SUDO mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc 2>/dev/null ||
      fail "binfmt_misc is not mounted and cannot be$1"
  fi
}

# binfmt_enable ARCH…: registers qemu-ARCH where it is not (the caller checks the result it needs).
binfmt_enable() {
  local arch
  for arch in "$@"; do
    [ -e "/proc/sys/fs/binfmt_misc/qemu-$arch" ] || $SUDO update-binfmts --enable "qemu-$arch" >/dev/null 2>&1 || true
  done
}

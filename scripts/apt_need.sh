# apt_need.sh - sourced by the scripts here: apt_need PKG... installs the
# Debian packages among PKG that are not installed yet (as root, or through
# sudo).  Without apt-get it does nothing: the build's probes then say what
# is missing.
apt_need() {
  command -v apt-get >/dev/null || return 0
  local sudo= missing p
  [ "$(id -u)" = 0 ] || sudo=sudo
  missing=$(for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || echo "$p"; done)
  [ -n "$missing" ] || return 0
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  # shellcheck disable=SC2086
  $sudo apt-get install -y -qq --no-install-recommends $missing >/dev/null
}

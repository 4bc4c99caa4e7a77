# Sourced by scripts/setup.sh and scripts/test.sh: one way to install the
# Debian packages a step needs.
#
#   install_debian_packages WHO PACKAGE...
#
# Installs those of PACKAGE... that dpkg does not list as installed (apt-get,
# as root or through sudo), saying so with WHO as the prefix; does nothing
# when every one is there. Exits 1 when it would need root and has no sudo.
install_debian_packages() {
  local who=$1
  shift
  local missing=() p
  for p in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$p")
    fi
  done
  ((${#missing[@]})) || return 0
  echo "$who: installing ${missing[*]}"
  local sudo=""
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || { echo "$who: need root or sudo to install ${missing[*]}" >&2; exit 1; }
    sudo="sudo"
  fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages named as arguments that are missing: with apt-get when
# running as root (or with passwordless sudo), otherwise prints the exact command and fails.
set -euo pipefail

missing=()
for package in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$package")
    fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
    echo "error: missing system packages: ${missing[*]}; this script knows only apt-get." >&2
    exit 1
fi

install=(apt-get install -y --no-install-recommends "${missing[@]}")
if [ "$(id -u)" -eq 0 ]; then
    sudo=()
elif sudo -n true 2>/dev/null; then
    sudo=(sudo)
else
    echo "error: missing system packages: ${missing[*]}" >&2
    echo "run:   sudo apt-get update && sudo ${install[*]}" >&2
    exit 1
fi
echo "installing system packages: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" "${install[@]}" >/dev/null

#!/usr/bin/env bash
# Installs the external tools the deploy tests and the end-to-end checks need, from Debian's packages:
#   promtool (prometheus), amtool (prometheus-alertmanager), chromium (dashboard screenshots).
# Idempotent: does nothing when every tool is already on PATH. Needs root (CI runs as root).
set -euo pipefail

need=()
command -v promtool >/dev/null 2>&1 || need+=(prometheus)
command -v amtool >/dev/null 2>&1 || need+=(prometheus-alertmanager)
command -v chromium >/dev/null 2>&1 || need+=(chromium)

if [ "${#need[@]}" -eq 0 ]; then
  echo "install-tools: promtool, amtool and chromium already present; nothing to do"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  SUDO="sudo"
fi

echo "install-tools: installing ${need[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# --no-install-recommends keeps the install small; the services themselves are not started here
# (the Debian packages' own units are irrelevant inside a container without systemd).
$SUDO apt-get install -y -qq --no-install-recommends "${need[@]}"

for tool in promtool amtool chromium; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "install-tools: $tool still missing after install" >&2
    exit 1
  fi
done
echo "install-tools: done ($(promtool --version 2>&1 | head -n1))"

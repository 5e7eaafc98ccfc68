#!/usr/bin/env bash
# The Debian packages the test suite's servers need: PostgreSQL (the knowledge-network store at scale), Virtuoso
# (the usual remote SPARQL host for Freebase) and Chromium (the console page's tests drive it headless through
# Playwright). Installs whichever is missing (apt, as root or via sudo); a no-op when all are there.
# Called by `make install`.
set -euo pipefail
missing=()
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
command -v virtuoso-t >/dev/null 2>&1 || missing+=(virtuoso-opensource)
[ -x /usr/bin/chromium ] || missing+=(chromium)
# a CJK font, so Chinese networks' names render in the browser (screenshots, tests)
[ -e /usr/share/fonts/truetype/wqy/wqy-microhei.ttc ] || missing+=(fonts-wqy-microhei)
[ ${#missing[@]} -eq 0 ] && exit 0
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "system packages missing (${missing[*]}): install them as root" >&2; exit 1; }
  sudo="sudo -n"
fi
echo "installing system packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# the packages' own services are not used: the tests start throwaway servers on free ports
for svc in postgresql virtuoso-opensource-7; do
  $sudo service "$svc" stop >/dev/null 2>&1 || true
done

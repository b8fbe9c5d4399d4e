# Sourced by the report page's browser tests, after `work` (their work directory) is set: exits 77
# (skipped, not passed) when Chromium is not installed (dev/setup installs it); `dump URL` prints the
# page's DOM after its script ran, in a fresh profile each time; `shown DOM-FILE ID` the text of the
# element of that id; `check WHAT GOT EXPECTED` compares the two, printing ok or FAIL (then failed=1).
browser=$(command -v chromium || command -v chromium-browser || true)
if [[ -z $browser ]]; then
  echo "chromium is not installed (dev/setup installs it): skipping $(basename "$0")"
  exit 77
fi
run=0
dump() {
  run=$((run + 1))
  mkdir -p "$work/profile-$run"
  "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
    --disable-component-update --disable-sync --disable-dev-shm-usage --user-data-dir="$work/profile-$run" \
    --virtual-time-budget=2000 --dump-dom "$1" 2>>"$work/chromium.log"
}
# `layout URL WORK [page_layout.py's checks]`: the page's layout at 800 and 1280 px in headless Chromium
# (tests/web/page_layout.py, by a python3 with Debian's python3-websocket; exits 77 without one).
page_layout=$(cd "$(dirname "${BASH_SOURCE[0]}")/../web" && pwd)/page_layout.py
python=$(for p in /usr/bin/python3 python3; do "$p" -c 'import websocket' 2>/dev/null && command -v "$p" && break; done || true)
layout() {
  if [[ -z $python ]]; then
    echo "python3-websocket is not installed (dev/setup installs it): skipping $(basename "$0")"
    exit 77
  fi
  "$python" "$page_layout" "$@"
}
shown() { grep -o "id=\"$2\">[^<]*" "$1" | head -1 | sed 's/.*>//'; }
check() {
  if [[ $2 != "$3" ]]; then
    echo "FAIL: $1: the page has '$2', expected '$3'"
    failed=1
  else
    echo "ok: $1: $2"
  fi
}

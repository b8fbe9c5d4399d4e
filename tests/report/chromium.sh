# Sourced by the report page's browser tests, after `work` (their work directory) is set: exits 77
# (skipped, not passed) when Chromium is not installed (dev/setup installs it); `dump URL` prints the
# page's DOM after its script ran, in a fresh profile each time.
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

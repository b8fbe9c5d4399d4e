#!/usr/bin/env bash
# A checkpoint is passed the same way to every program that reads one (docs/command-line.md): as the first
# argument, or as --checkpoint CKPT anywhere on the line, with the same output either way.
#
#   checkpoint_argument.sh HEATMAP FIGURE GENERATE CKPT WORK_DIR     (CKPT: a GPT with two heads, block 8)
set -u
heatmap=$1 figure=$2 generate=$3 ckpt=$4 work=$5
rm -rf "$work" && mkdir -p "$work" || exit 1
failed=0
fail() { echo "FAIL: $*"; failed=1; }

# run LABEL PROGRAM ARGS...: exit 0 with something on stdout, kept in $work/LABEL
run() {
  local label=$1
  shift
  "$@" >"$work/$label" 2>"$work/$label.err" || { fail "$label: exit status $? from $*: $(<"$work/$label.err")"; return 1; }
  [[ -s $work/$label ]] || { fail "$label: nothing on stdout from $*"; return 1; }
}

# same LABEL PROGRAM ARGS...: PROGRAM CKPT ARGS, PROGRAM ARGS CKPT and PROGRAM --checkpoint CKPT ARGS print
# the same bytes
same() {
  local label=$1 program=$2
  shift 2
  run "$label.first" "$program" "$ckpt" "$@" || return
  run "$label.last" "$program" "$@" "$ckpt" || return
  run "$label.flag" "$program" --checkpoint "$ckpt" "$@" || return
  cmp "$work/$label.first" "$work/$label.flag" || fail "$label: CKPT and --checkpoint CKPT differ"
  cmp "$work/$label.last" "$work/$label.flag" || fail "$label: CKPT after the flags and --checkpoint CKPT differ"
  echo "ok: $label: $(wc -c <"$work/$label.flag") bytes, the same all three ways"
}

same heatmap "$heatmap" --prompt hea --color never
same heatmap_head "$heatmap" --prompt hea --head 1 --color never
same figure_json "$figure" --prompt hea --json
same generate "$generate" --prompt hea --chars 40 --seed 3

# figure's page: the same bytes in the file too
run figure_page.first "$figure" "$ckpt" --prompt hea --out "$work/first.html" &&
  run figure_page.flag "$figure" --checkpoint "$ckpt" --prompt hea --out "$work/flag.html" &&
  { cmp "$work/first.html" "$work/flag.html" || fail "figure's pages differ"; }

# the heatmap of a checkpoint is not the untrained head's (CKPT was read, not ignored)
run heatmap_untrained "$heatmap" --prompt hea --color never &&
  { ! cmp -s "$work/heatmap.first" "$work/heatmap_untrained" || fail "heatmap CKPT shows the untrained head"; }
exit $failed

#!/usr/bin/env bash
# The model ladder on a text file: trains each rung with a fixed seed and prints our validation loss
# beside the reference from Karpathy's "Let's build GPT" lecture and nanoGPT's CPU "baby GPT".
#
#   examples/ladder.sh ../shared/data/tinyshakespeare.txt [build/release/examples/train]
#
# A rung passes when our validation loss is at most the reference + 0.03. Exit status 1 if any fails.
#
# The conventions of every program here (README "Command line"): --help and --version exit 0; a usage
# error exits 2 with one line ending "see --help"; a runtime failure exits 1.
set -euo pipefail
usage="usage: ladder.sh DATA [TRAIN_BINARY]
The model ladder on a text file: each rung's validation loss beside the lecture's reference.
  DATA          the text to train on, e.g. tinyshakespeare.txt
  TRAIN_BINARY  the train program                  (default build/release/examples/train)
  THREADS=N     environment: threads for the kernels (default 1)

  --help        this text, then exit
  --version     the version, then exit"
usage_error() { echo "ladder.sh: $1; see --help" >&2; exit 2; }
case "${1-}" in
  --help | -h) echo "$usage"; exit 0 ;;
  --version)
    version=$(sed -nE 's/^project\(tinygpt VERSION ([0-9.]+).*/\1/p' "$(dirname "$0")/../CMakeLists.txt")
    echo "ladder.sh (tinygpt) $version"; exit 0 ;;
  -*) usage_error "unknown flag '$1'" ;;
esac
[ $# -ge 1 ] || usage_error "DATA is missing: the text to train on"
[ $# -le 2 ] || usage_error "unexpected argument '$3'"
data=$1
train=${2:-"$(dirname "$0")/../build/release/examples/train"}
threads=${THREADS:-1}
[ -r "$data" ] || { echo "ladder.sh: cannot read $data" >&2; exit 1; }
[ -x "$train" ] || { echo "ladder.sh: no train program at $train (build first)" >&2; exit 1; }

# name | reference | flags. The lecture's rungs keep the learning rate constant (min-lr = lr) and
# use AdamW's default weight decay; the baby GPT uses nanoGPT's settings.
rungs=(
  "bigram|2.49|--model bigram --block 8 --batch 32 --lr 1e-2 --min-lr 1e-2 --weight-decay 0.01 --steps 3000"
  "single head|2.40|--model head --n-embd 32 --block 8 --batch 32 --lr 1e-3 --min-lr 1e-3 --weight-decay 0.01 --steps 5000"
  "4 heads of 8|2.28|--model multihead --n-embd 32 --n-head 4 --block 8 --batch 32 --lr 1e-3 --min-lr 1e-3 --weight-decay 0.01 --steps 5000"
  "+ feed-forward|2.24|--model multihead --feed-forward --n-embd 32 --n-head 4 --block 8 --batch 32 --lr 1e-3 --min-lr 1e-3 --weight-decay 0.01 --steps 5000"
  "+ residual blocks, LayerNorm|2.06|--model gpt --init default --n-layer 3 --n-embd 32 --n-head 4 --block 8 --batch 32 --lr 1e-3 --min-lr 1e-3 --weight-decay 0.01 --steps 5000"
  "baby GPT|1.88|--model gpt --n-layer 4 --n-head 4 --n-embd 128 --block 64 --batch 12 --lr 1e-3 --min-lr 1e-4 --warmup 100 --weight-decay 0.1 --grad-clip 1.0 --steps 2000"
)

printf '%-30s %10s %10s %10s %8s %9s %s\n' rung params "val loss" reference delta seconds result
failed=0
for rung in "${rungs[@]}"; do
  IFS='|' read -r name reference flags <<<"$rung"
  # shellcheck disable=SC2086
  json=$("$train" $flags --data "$data" --seed 1337 --eval-iters 200 --eval-every 1000000 --sample 0 --threads "$threads" --json 2>/dev/null)
  # a number of train's one-line JSON object, whatever its spacing; a missing one stops the ladder
  field() {
    local value
    value=$(sed -nE "s/.*\"$1\"[[:space:]]*:[[:space:]]*([-0-9.eE+]+).*/\1/p" <<<"$json")
    [ -n "$value" ] || { echo "ladder.sh: no $1 in train's JSON for $name: $json" >&2; exit 1; }
    echo "$value"
  }
  val=$(field val_loss) || exit 1
  params=$(field params) || exit 1
  seconds=$(field seconds) || exit 1
  verdict=$(awk -v v="$val" -v r="$reference" 'BEGIN { print (v <= r + 0.03) ? "ok" : "FAIL" }')
  [ "$verdict" = ok ] || failed=1
  printf '%-30s %10s %10.4f %10.2f %+8.3f %9.1f %s\n' "$name" "$params" "$val" "$reference" \
    "$(awk -v v="$val" -v r="$reference" 'BEGIN { print v - r }')" "$seconds" "$verdict"
done
exit $failed

# Sourced by the scripts that run the programs on files made to a shape (shaped_models.sh, progress.sh,
# inspect_words.sh), with $make the path of llmc_model.py and $work their work directory, which it
# empties and enters:
#   model OUT.bin FLAGS...   llm.c's model file of that shape (llmc_model.py's flags)
#   ids FILE N MOD           N uint16 ids (nanoGPT's token file), i * 7 % MOD
#   fail MESSAGE             prints FAIL: MESSAGE and sets failed=1 (the script's exit status)
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
failed=0
fail() { echo "FAIL: $*"; failed=1; }
model() { python3 "$make" "$@" || { echo "cannot make $1"; exit 1; }; }
ids() {
  python3 -c "import struct, sys; n, m = int(sys.argv[2]), int(sys.argv[3]); open(sys.argv[1], 'wb').write(struct.pack(f'<{n}H', *(i * 7 % m for i in range(n))))" "$@"
}

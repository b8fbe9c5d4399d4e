// Prints run.c's encode() ids (no BOS, no EOS) of a text, and run.c's decode() of BOS + those ids.
// usage: encode_ids TOKENIZER VOCAB_SIZE TEXT_FILE NBYTES|lines IDS_OUT DECODED_OUT
// NBYTES: the file's first NBYTES bytes as one text; "lines": each line (without its '\n') as one text,
// its ids on one line of IDS_OUT.
#define TESTING
#include "run.c"

static void encode_one(Tokenizer* t, char* text, FILE* ids_out, FILE* dec_out) {
    int* tokens = malloc((strlen(text) + 3) * sizeof(int));
    int n = 0;
    encode(t, text, 0, 0, tokens, &n);
    for (int i = 0; i < n; i++) fprintf(ids_out, i ? " %d" : "%d", tokens[i]);
    fprintf(ids_out, "\n");
    int prev = 1;  // as generate() prints: the pieces after BOS
    for (int i = 0; i < n; i++) { char* piece = decode(t, prev, tokens[i]); fputs(piece, dec_out); prev = tokens[i]; }
    free(tokens);
}

int main(int argc, char** argv) {
    if (argc != 7) { fprintf(stderr, "usage\n"); return 2; }
    Tokenizer t;
    build_tokenizer(&t, argv[1], atoi(argv[2]));
    FILE* in = fopen(argv[3], "rb");
    FILE* ids_out = fopen(argv[5], "w");
    FILE* dec_out = fopen(argv[6], "wb");
    if (!in || !ids_out || !dec_out) { fprintf(stderr, "cannot open\n"); return 1; }
    if (strcmp(argv[4], "lines") == 0) {
        char line[1 << 16];
        while (fgets(line, sizeof line, in)) {
            size_t len = strlen(line);
            if (len && line[len - 1] == '\n') line[len - 1] = '\0';
            encode_one(&t, line, ids_out, dec_out);
            fputc('\n', dec_out);
        }
    } else {
        long n = atol(argv[4]);
        char* text = calloc(n + 1, 1);
        if (fread(text, 1, n, in) != (size_t)n) { fprintf(stderr, "short read\n"); return 1; }
        encode_one(&t, text, ids_out, dec_out);
        free(text);
    }
    fclose(ids_out); fclose(dec_out);
    free_tokenizer(&t);
    return 0;
}

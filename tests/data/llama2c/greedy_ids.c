// run.c's generate() loop with the prompt given as token ids (run.c takes only text), greedy (-t 0):
// prints the ids it samples after the prompt, one line; on stderr, the smallest gap between the best and
// second-best logit over the sampled steps (a near tie is where another fp32 forward may pick otherwise).
// usage: greedy_ids MODEL STEPS ID...
#define TESTING
#include "run.c"

int main(int argc, char** argv) {
    if (argc < 4) { fprintf(stderr, "usage: greedy_ids MODEL STEPS ID...\n"); return 2; }
    Transformer transformer;
    build_transformer(&transformer, argv[1]);
    int steps = atoi(argv[2]);
    if (steps == 0 || steps > transformer.config.seq_len) steps = transformer.config.seq_len;
    int n = argc - 3;
    int* prompt = malloc(n * sizeof(int));
    for (int i = 0; i < n; i++) prompt[i] = atoi(argv[3 + i]);
    Sampler sampler;
    build_sampler(&sampler, transformer.config.vocab_size, 0.0f, 0.9f, 1);
    int token = prompt[0], pos = 0, next, first = 1;
    float min_gap = 1e30f; int min_gap_pos = -1;
    while (pos < steps) {  // as generate(): forward, force the prompt, else sample; stop at BOS
        float* logits = forward(&transformer, token, pos);
        if (pos < n - 1) {
            next = prompt[pos + 1];
        } else {
            int V = transformer.config.vocab_size, best = sample(&sampler, logits);
            float second = -1e30f;
            for (int i = 0; i < V; i++) if (i != best && logits[i] > second) second = logits[i];
            if (logits[best] - second < min_gap) { min_gap = logits[best] - second; min_gap_pos = pos; }
            next = best;
            printf(first ? "%d" : " %d", next);
            first = 0;
        }
        pos++;
        if (next == 1) break;
        token = next;
    }
    printf("\n");
    fprintf(stderr, "smallest top-1/top-2 logit gap %g at position %d\n", min_gap, min_gap_pos);
    free(prompt);
    free_sampler(&sampler);
    free_transformer(&transformer);
    return 0;
}

// libFuzzer target: the external curve format (runs/import.h): a runs table, a line "=====", then a curves
// table, each read as CSV and again as JSONL; without the separator the input is a curves table that
// carries the run columns itself.
#include "runs/import.h"
#include "fuzz_util.h"

static void read_as(const char *runs, const char *curves) {
    import_options o = {.runs_path = runs, .curves_path = curves, .loss_cols = "loss"};
    import_ladder l;
    (void)import_read_tables(&o, &l);
    import_ladder_free(&l);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    if (n > 65536) return 0;
    size_t n1, off2;
    fuzz_split(data, n, "\n=====\n", &n1, &off2);
    int split = off2 < n || n1 < n;
    const char *runs_csv = split ? fuzz_file(0, "runs.csv", data, n1) : NULL;
    const char *curves_csv = fuzz_file(1, "curves.csv", data + (split ? off2 : 0), n - (split ? off2 : 0));
    read_as(runs_csv, curves_csv);
    const char *runs_jsonl = split ? fuzz_file(2, "runs.jsonl", data, n1) : NULL;
    const char *curves_jsonl = fuzz_file(3, "curves.jsonl", data + (split ? off2 : 0), n - (split ? off2 : 0));
    read_as(runs_jsonl, curves_jsonl);
    return 0;
}

// look_record: the looks of a `compare --until-decided`, kept in the baseline ladder's directory so that a
// second --until-decided on the same ladders (a larger budget, a resumed study) counts the looks the first one
// made instead of spending the 5% afresh: each look's seeds per rung (scale/sequential.h derives its
// information from them) and each variant's verdict (the look that decided it, its direction, its last level).
// Written after every look; read back only for the same comparison: the same ladders in the same order, the same
// rungs, target compute and Linf pinning (another target is another hypothesis).
// Not responsible for the tests themselves (scale/sequential.h) or the seed counts (scale/ladder_seeds.h).
//
// A rung added by --until-decided starts a new stage of the looks (scale/sequential.h): the record keeps where
// each stage began and the information fraction each variant's test had at the last look of the stage before.
//
// BASELINE_DIR/until-decided.json: {"format": "sextant-until-decided-looks", "version": 1 (2 with stages),
//     "ladders": [names, baseline first], "widths": [the baseline's rungs, plan order], "target_flops": C,
//     "shared_linf": bool,
//     "looks": [[seeds per rung], ...] (0 at a rung added after that look), "last_final": bool (the last look
//     spent what alpha was left: the budget's end), "verdicts": [per ladder: {"look": k or null, "better": bool,
//     "level": x or null}], version 2: "stages": [per rung added: {"from_look": the first look after it,
//     "t": [per ladder: the information fraction of its test at the look before, or null]}],
//     "crc32": zlib crc32 of {"ladders", "widths", "target_flops", "shared_linf", "looks", "last_final",
//     "verdicts"[, "stages"]} dumped compact, keys in this order}
#ifndef SEXTANT_SCALE_LOOK_RECORD_H
#define SEXTANT_SCALE_LOOK_RECORD_H
#include <stdbool.h>
#include <stddef.h>
#include "core/status.h"
#include "scale/ladder.h"

#define LOOK_RECORD_FILE "until-decided.json"
#define LOOK_RECORD_VERSION 2   // 1 (no stages) is still read

// Which comparison: its ladders (n names, baseline first), the baseline's rungs (R widths, plan order), the
// target compute and whether every Linf is pinned to the baseline's.
typedef struct {
    const char *const *names;
    size_t n;
    const size_t *widths;
    size_t R;
    double target_flops;
    bool shared_linf;
} look_key;

// A variant's sequential verdict: rejected at one look, it stays decided (a group-sequential test stops there).
typedef struct {
    int look;       // the look that decided it (0: the ladders as given), -1 while undecided
    bool better;
    double level;   // the nominal level of its last test, NAN where none was tested
} look_verdict;

typedef struct {
    size_t n_looks;
    size_t (*seeds)[LADDER_MAX_RUNGS];   // (n_looks): each look's seeds per rung
    bool last_final;                     // the last look spent what was left (the budget's end)
    look_verdict *verdicts;              // (ladders), the baseline's first
    size_t n_stages;                     // rungs added: the stages closed before the current one
    size_t stage_first[LADDER_MAX_RUNGS];   // the first look after each
    double *stage_t;                     // (n_stages x ladders): each test's information fraction at the look
                                         // before it (NAN: not tested there)
} look_record;

// Writes dir/until-decided.json (atomically): comparison k's looks and verdicts (one per ladder).
sx_status look_record_write(const char *dir, const look_key *k, const look_record *rec);
// Reads dir/until-decided.json into *rec (its arrays allocated; look_record_free) when it records comparison k;
// otherwise rec->n_looks = 0 and *why (when not NULL) says why it does not apply (NULL: there is no file).
// SX_ERR_FORMAT for a file that is not this format, version or checksum, or whose looks are out of range.
sx_status look_record_read(const char *dir, const look_key *k, look_record *rec, const char **why);
void look_record_free(look_record *rec);

#endif

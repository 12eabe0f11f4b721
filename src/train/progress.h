// progress: a training run's position as a checkpoint stores it under "train" (step, tokens and FLOPs
// seen, the spike guard's running average, the data position), read back with every field checked before
// the trainer acts on it. A checkpoint's checksum only says the file is what was written; a hand-edited or
// foreign file can still carry a step of -5 or "abc", which once aborted on an assert after metrics.jsonl
// was emptied, or silently restarted the run and deleted its history.
// Also the check that a resume is given the same settings and data as the run it continues (config.json's
// flags and data_identity).
// Not responsible for the data position's own fields (train/batches.h checks them) or for writing.
#ifndef SEXTANT_TRAIN_PROGRESS_H
#define SEXTANT_TRAIN_PROGRESS_H
#include <jansson.h>
#include "core/status.h"

typedef struct {
    long step;            // completed optimizer steps
    double tokens_seen, flops_seen;
    double loss_avg;      // running average of good losses
    long loss_avg_n;
    json_t *data;         // borrowed from the metadata: the batch source's position
} train_progress;

// Reads meta (the checkpoint's "train" object) into *out. total_steps: the run's length (a step beyond it
// is SX_ERR_MISMATCH); optimizer_steps: the optimizer's step counter from the same file, which must equal
// the step (Adam's bias correction restarts otherwise), or < 0 to skip that check. from names the file in
// messages. Errors: SX_ERR_FORMAT naming the field and its value.
sx_status train_progress_read(json_t *meta, long total_steps, long optimizer_steps, const char *from,
                              train_progress *out);

// A resumed run must be the run it resumes: compares the flags recorded in its config.json (old_flags, the
// "flags" object) with this invocation's (new_flags), except those that only change how the run is watched
// (threads, evaluation cadence, checkpoints, --quiet, ...) and those named in overrides (comma-separated
// flag names without dashes, e.g. "steps"). SX_ERR_MISMATCH listing every difference ("--lr 0.01 (was
// 0.003), ..."); SX_OK when either side recorded no flags. from names the run directory.
// old_resolved: the old run's train_paths_resolved (NULL: none recorded), so that a file named another way (an
// absolute path from another directory) is the same file.
sx_status train_config_check_resume(json_t *old_flags, json_t *old_resolved, json_t *new_flags, const char *overrides,
                                    const char *from);

// The training flags that differ between two runs' "flags" objects, except those that only change how a run
// is watched and those named in also_free (comma-separated), and path flags whose new value resolves to the
// file old_resolved records (NULL: compare as text): their count, and "--lr 0.01 (WAS 0.003), ..." in diff
// (cap bytes, cut short where it is full).
size_t train_flags_differ(json_t *old_flags, json_t *old_resolved, json_t *new_flags, const char *also_free,
                          const char *was, char *diff, size_t cap);

// The absolute paths (realpath) of the flags that name data files (--train, --val, --eval-tasks-val,
// --prefix-vocab), where they exist: {"train": "/abs/train.shard", ...}; config.json keeps it for resume.
json_t *train_paths_resolved(json_t *flags);

// What the token shards among those flags hold (--train, --val, --eval-tasks-val; not synthetic data or a
// mixture): {"train": {"tokens": N, "crc32": "89abcdef"}, ...}, the shard header's token count and checksum;
// config.json keeps it for resume.
json_t *train_data_identity(json_t *flags);
// A resumed run reads the data it trained on: each shard old_identity records must hold the same tokens now
// (the same path rewritten with other text would pass the flag check), unless its flag is in overrides.
// SX_ERR_MISMATCH naming the flag, the path and both identities.
sx_status train_data_check_resume(json_t *old_identity, json_t *new_flags, const char *overrides, const char *from);

#endif

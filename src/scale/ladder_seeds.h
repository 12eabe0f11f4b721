// ladder_seeds: the seeds, and the rungs, a ladder directory holds beyond its spec. `compare --until-decided`
// adds seeds to chosen rungs, and where the interval is mostly the extrapolation's a larger rung
// (scale/sequential.h), and records every rung's seed count in DIR/seeds.json; `ladder plan|run|status`,
// `fit` (and its `--with` twin), `compare`, `report` and `import --from-ladder` open a ladder through
// ladder_open, which reads it back into the spec (rung_seeds, and the added widths), so the plan names every
// run the directory holds. A directory without the file keeps the spec's rungs and seeds.
// Not responsible for the plan itself (scale/ladder.h) or choosing where seeds go (scale/sequential.h).
//
// DIR/seeds.json: {"format": "sextant-ladder-seeds", "version": 1 (2 where a rung was added), "ladder": NAME,
//                  "rungs": [{"width": W, "seeds": N[, "added": true]}, ...] (plan order, largest first;
//                  "added", version 2 only: a rung the spec does not list),
//                  "crc32": zlib crc32 of the "rungs" array dumped compact, keys in order}
#ifndef SEXTANT_SCALE_LADDER_SEEDS_H
#define SEXTANT_SCALE_LADDER_SEEDS_H
#include "core/status.h"
#include "scale/ladder.h"

#define LADDER_SEEDS_FILE "seeds.json"
#define LADDER_SEEDS_VERSION 2   // 1 (no rung added) is still read

// Sets spec->rung_seeds from DIR/seeds.json where it exists (a rung the file does not name, or names with
// no more than the spec's seeds, keeps n_seeds), and adds the rungs it marks added (ladder_add_rung; a width
// the spec has no rung for and the file does not mark added is ignored). SX_OK without the file; SX_ERR_FORMAT
// for a file that is not this format, version or checksum, or adds a rung the spec cannot take (a ladder of
// budgets, more than LADDER_MAX_RUNGS rungs, a width not above the ladder's).
sx_status ladder_seeds_read(ladder_spec *spec, const char *dir);
// Opens a ladder's runs for reading: the spec at spec_path into *spec, its run directory (runs_dir, or
// runs/<name> when runs_dir is NULL or empty) into dir (size bytes; empty when the spec cannot be read), and
// the seeds that directory records (ladder_seeds_read). Every command that reads a ladder's runs opens it
// here, so none can miss the seeds an earlier `compare --until-decided` added. SX_ERR_ARG when the directory's
// path does not fit in size.
sx_status ladder_open(const char *spec_path, const char *runs_dir, ladder_spec *spec, char *dir, size_t size);
// Writes DIR/seeds.json (atomically) with every rung's seed count (ladder_rung_seeds) and which rungs were added;
// version 1 where none was (what readers before added rungs read).
sx_status ladder_seeds_write(const ladder_spec *spec, const char *dir);
// Adds a rung of this width in front of the plan (the spec's widths grow by one at the end, rung_seeds shift one
// place), with seeds seeds. SX_ERR_ARG for a ladder of budgets, one with LADDER_MAX_RUNGS rungs already, or a
// width it has.
sx_status ladder_add_rung(ladder_spec *spec, size_t width, size_t seeds);

#endif

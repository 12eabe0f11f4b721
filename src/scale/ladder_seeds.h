// ladder_seeds: the seeds a ladder directory holds beyond its spec's `seeds N`, per rung. `compare
// --until-decided` adds seeds to chosen rungs (scale/sequential.h) and records every rung's seed count in
// DIR/seeds.json; `ladder plan|run|status`, `fit` (and its `--with` twin), `compare`, `report` and `import
// --from-ladder` open a ladder through ladder_open, which reads it back into the spec (rung_seeds), so the plan
// names every run the directory holds. A directory without the file keeps the spec's seeds.
// Not responsible for the plan itself (scale/ladder.h) or choosing where seeds go (scale/sequential.h).
//
// DIR/seeds.json: {"format": "sextant-ladder-seeds", "version": 1, "ladder": NAME,
//                  "rungs": [{"width": W, "seeds": N}, ...] (plan order, largest first),
//                  "crc32": zlib crc32 of the "rungs" array dumped compact, keys in order}
#ifndef SEXTANT_SCALE_LADDER_SEEDS_H
#define SEXTANT_SCALE_LADDER_SEEDS_H
#include "core/status.h"
#include "scale/ladder.h"

#define LADDER_SEEDS_FILE "seeds.json"
#define LADDER_SEEDS_VERSION 1

// Sets spec->rung_seeds from DIR/seeds.json where it exists (a rung the file does not name, or names with
// no more than the spec's seeds, keeps n_seeds; a width the spec has no rung for is ignored). SX_OK
// without the file; SX_ERR_FORMAT for a file that is not this format, version or checksum.
sx_status ladder_seeds_read(ladder_spec *spec, const char *dir);
// Opens a ladder's runs for reading: the spec at spec_path into *spec, its run directory (runs_dir, or
// runs/<name> when runs_dir is NULL or empty) into dir (size bytes; empty when the spec cannot be read), and
// the seeds that directory records (ladder_seeds_read). Every command that reads a ladder's runs opens it
// here, so none can miss the seeds an earlier `compare --until-decided` added. SX_ERR_ARG when the directory's
// path does not fit in size.
sx_status ladder_open(const char *spec_path, const char *runs_dir, ladder_spec *spec, char *dir, size_t size);
// Writes DIR/seeds.json (atomically) with every rung's seed count (ladder_rung_seeds).
sx_status ladder_seeds_write(const ladder_spec *spec, const char *dir);

#endif

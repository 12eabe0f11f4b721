// schedule: learning-rate schedules as a pure function of the step, so the trainer applies them and the
// forecaster evaluates them without training. A schedule gives the multiplier of the base learning rates.
// Not responsible for: the base learning rates themselves (optimizer_config), or what the trainer does with
// a step past total_steps (it must not ask).
//
// Spec strings (lr_schedule_parse):   KIND[:KEY=VALUE[,KEY=VALUE]...]
//   constant                    1 after warmup
//   cosine[:min=R]              min + (1-min)·(1+cos(pi·p))/2,  p = (s-W)/(T-W)
//   linear[:min=R]              1 - (1-min)·p,                  p = (s-W)/(T-W)
//   wsd[:decay=F,shape=S,min=R] 1 until step T-D, then decays to min over the last D = round(F·T) steps
//                               with p = (s-(T-D))/D and shape S: linear (1-p), cosine ((1+cos(pi·p))/2)
//                               or sqrt (1-sqrt(p)), scaled as min + (1-min)·shape.  Defaults decay=0.2,
//                               shape=sqrt.
//   file:PATH[,KEY=VALUE...]    piecewise linear through the points of a text file (below); PATH ends at
//                               the first ',' (paths containing ',' are not supported).
// Every kind takes warmup=X: X < 1 is a fraction of total_steps (W = round(X·T)); X >= 1 must be a whole
// number of steps. Defaults: min=0, warmup=0. R and F lie in [0, 1].
// With s = 1..T the update number, T = total_steps and W = warmup steps, the multiplier is
//   mult(s) = min(1, s/W) · base(s)
// where base(s) is the expression above (cosine and linear measure progress from the end of warmup, so
// they start at 1; WSD and file schedules use absolute positions). The last step of a cosine, linear or
// WSD schedule (s = T) has mult = min.
//
// Schedule files: one point per line, "POSITION MULTIPLIER" separated by blanks; '#' starts a comment;
// blank lines are ignored. POSITION is a fraction of the run in [0, 1] (x = s/T) unless a line
// "unit steps" comes before the first point, in which case it is a whole step number >= 0 (x = s).
// Positions must increase strictly; multipliers must be finite and >= 0; at most LR_FILE_MAX_POINTS.
// Between points the multiplier is interpolated linearly; before the first and after the last point it
// is held at that point's value.
#ifndef SEXTANT_OPTIM_SCHEDULE_H
#define SEXTANT_OPTIM_SCHEDULE_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"

#define LR_FILE_MAX_POINTS 256
#define LR_SPEC_MAX 256

typedef enum { LR_CONSTANT, LR_COSINE, LR_LINEAR, LR_WSD, LR_FILE } lr_kind;
typedef enum { LR_SHAPE_LINEAR, LR_SHAPE_COSINE, LR_SHAPE_SQRT } lr_decay_shape;

// A plain value (no pointers): copy it freely, nothing to free.
typedef struct {
    lr_kind kind;
    long total_steps;           // T >= 1
    long warmup_steps;          // W
    double min_ratio;           // final multiplier of cosine, linear, WSD
    double decay_fraction;      // WSD: F
    long decay_steps;           // WSD: D = round(F·T)
    lr_decay_shape shape;       // WSD decay shape
    bool file_in_steps;         // file: positions are steps (else fractions of T)
    size_t n_points;            // file: number of points
    double px[LR_FILE_MAX_POINTS], py[LR_FILE_MAX_POINTS]; // file: positions and multipliers
    char spec[LR_SPEC_MAX];     // the spec string as given
    char path[LR_SPEC_MAX];     // file: the schedule file
} lr_schedule;

// Parses spec (grammar above) for a run of total_steps updates, reading the file for `file:`.
// On error: SX_ERR_ARG (bad spec, naming the bad part), SX_ERR_IO (file cannot be read) or SX_ERR_FORMAT
// (bad file content, as "PATH:LINE: what"); *out is then unspecified.
sx_status lr_schedule_parse(const char *spec, long total_steps, lr_schedule *out);
// Sets the warmup from a separate flag value (same meaning as warmup=X in a spec) and revalidates.
// On error *s is unchanged.
sx_status lr_schedule_set_warmup(lr_schedule *s, const char *value);

// The multiplier applied at update step (1 <= step <= total_steps).
double lr_schedule_mult(const lr_schedule *s, long step);
// mult[i] = lr_schedule_mult(s, i + 1) for i < n (n <= total_steps). Overwrites mult.
void lr_schedule_fill(const lr_schedule *s, double *mult, long n);

// A new JSON object describing the resolved schedule (spec, kind, steps, parameters; file points
// included so the echo is self-contained). Caller owns the reference.
json_t *lr_schedule_to_json(const lr_schedule *s);
// One human-readable line, e.g. "wsd: warmup 100 steps, stable to step 800, 1-sqrt decay over 200 steps
// to 0". Writes at most size bytes (NUL-terminated) into buf.
void lr_schedule_describe(const lr_schedule *s, char *buf, size_t size);

#endif

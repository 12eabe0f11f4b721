// pubdata: loaders for the public scaling-law data in shared/data (see its README.md): the multi-power-law
// paper's loss curves with their per-step LR schedules rebuilt from the published formulas, the authors'
// fitted MPL constants and per-curve metrics, the Chinchilla replication points, and the over-training study's
// runs with their downstream errors (Gadre et al. 2024).
//
// Responsible for: parsing those CSVs and checking the rebuilt schedules against the released lr and S1
// columns. Not responsible for: fitting (laws/fit.h) or any other data set.
#ifndef SEXTANT_LAWS_PUBDATA_H
#define SEXTANT_LAWS_PUBDATA_H
#include <stddef.h>
#include "core/status.h"
#include "laws/laws.h"

typedef struct {
    char model[16];     // "25M", "100M", "400M"
    char schedule[32];  // e.g. "cosine_24000"
    int heldout;        // authors_role == "heldout" (0: one of the authors' fit schedules)
    double *lr;         // [n_steps] LR of every step, rebuilt from mpl_schedules.csv
    size_t n_steps;
    size_t *steps;      // [n_points] 0-based step of each released loss
    double *loss;       // [n_points]
    size_t n_points;
} pub_mpl_curve;

typedef struct {
    pub_mpl_curve *curves; // in file order
    size_t n_curves;
} pub_mpl;

// Loads mpl_loss_curves.csv and mpl_schedules.csv from dir for one model (NULL: all models). Fails with
// SX_ERR_FORMAT if a rebuilt LR or S1 disagrees with the released columns. out overwritten; free with
// pub_mpl_free.
sx_status pub_mpl_load(const char *dir, const char *model, pub_mpl *out);
void pub_mpl_free(pub_mpl *m);
// The authors' constants for a model from mpl_fitted_params.csv; p overwritten.
sx_status pub_mpl_fitted_params(const char *dir, const char *model, double p[LAW_MPL_NPARAM]);
// The authors' per-curve PredE and WorstE from mpl_reported_fit_metrics.csv.
sx_status pub_mpl_reported(const char *dir, const char *model, const char *schedule, double *prede,
                           double *worste);

typedef struct {
    size_t n;
    double *params, *tokens, *loss; // [n]
    int *excluded;                  // [n] Epoch's 5 dropped high-loss points
} pub_chinchilla;

// Loads chinchilla_epoch_extracted.csv (all 245 points; excluded flags the 5 Epoch drops).
sx_status pub_chinchilla_load(const char *dir, pub_chinchilla *out);
void pub_chinchilla_free(pub_chinchilla *c);

// One run of the over-training study (gadre_overtraining_runs.csv) with its average top-1 downstream error
// recomputed from gadre_overtraining_downstream.csv (one row per run and task).
typedef struct {
    char run_id[80], dataset[32];
    double params, tokens_per_param;
    int fit_point;      // paper_default_loss_fit_point: one of the 5 points the paper fits its loss law on
    int target;         // paper_figure1_target: one of the paper's extrapolation targets
    double loss_c4;     // loss_c4_val, the "C4 eval" loss the paper relates errors to
    double err17, err46; // mean top-1 error over the paper's 17-task subset and over all 46 tasks
} pub_gadre_run;

typedef struct {
    size_t n;
    pub_gadre_run *runs; // in file order
} pub_gadre;

// Loads both files from dir; the recomputed averages must match the runs table's err_avg_17task_subset and
// err_avg_46tasks to 1e-6 (SX_ERR_FORMAT otherwise, as for a run without downstream rows).
sx_status pub_gadre_load(const char *dir, pub_gadre *out);
void pub_gadre_free(pub_gadre *g);

#endif
